@testable import BenchKit
import Foundation
import ProVideoStorage
import TestSupport
import Testing

/// Docs/BENCHMARKS.md documents what calibrate runs, names nothing outside the repository;
/// calibrate's warnings and the bench's choice of scratch pools say what to do.
@Suite struct BenchDocsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    static func benchmarks() throws -> String {
        try String(contentsOfFile: root + "/Docs/BENCHMARKS.md", encoding: .utf8)
    }

    /// The fio command line in the docs is `fioArguments` for the defaults, word for word.
    @Test func documentedFioCommandIsTheOneRun() throws {
        let text = try Self.benchmarks()
        let start = try #require(text.range(of: "`fio --name=provideo-calibrate"))
        let end = try #require(text[start.upperBound...].range(of: "`"))
        let documented = text[text.index(after: start.lowerBound)..<end.lowerBound].split(whereSeparator: \.isWhitespace).map(String.init)
        let run = FioRun(file: "<pool>/captures/<id>/data", bytes: 8 << 30, blockSize: 4 << 20, queueDepth: 16,
                         fixedBuffers: true, hugePages: false)
        let arguments = ["fio"] + run.arguments.map { $0 == "--size=\(8 << 30)" ? "--size=<bytes>" : $0 }
        #expect(documented == arguments)
    }

    @Test func namesNoMachinePathAndNoIssue() throws {
        let text = try Self.benchmarks()
        for path in ["/work", "/var/", "/tmp", "/home", "/root", "/srv", "/media", "/mnt"] {
            #expect(!text.contains(path), "Docs/BENCHMARKS.md names \(path)")
        }
        let words = text.lowercased().split { !$0.isLetter }
        #expect(!words.contains("issue") && !words.contains("issues"), "Docs/BENCHMARKS.md speaks of an issue")
    }

    static func pass(_ raw: Double, _ durable: Double) -> Calibration.Pass {
        Calibration.Pass(bandwidth: raw, durableBandwidth: durable, durableCommits: 5, fioBandwidth: nil, efficiency: nil,
                         fioFirst: false)
    }

    @Test func spreadOverAQuarterWarns() throws {
        let steady = [Self.pass(1000e6, 800e6), Self.pass(1100e6, 820e6), Self.pass(1050e6, 790e6)]
        #expect(Calibration.spreadWarning(steady) == nil)
        let noisy = [Self.pass(1000e6, 800e6), Self.pass(1500e6, 810e6), Self.pass(1050e6, 790e6)]
        let warning = try #require(Calibration.spreadWarning(noisy))
        #expect(warning == "the passes spread more than 25%: raw 1000.0 MB/s … 1500.0 MB/s (48% of the median). "
                + "The disk was not steady (other I/O?): rerun with more --repeat and read the medians as rough")
    }

    /// Paired ratios average geometrically (2× and 0.5× are 1×), and each order's mean shows
    /// what running second is worth.
    @Test func pairedRatiosAverageGeometrically() throws {
        let summary = try #require(Calibration.RatioSummary([(2.0, false), (0.5, true), (2.0, false), (0.5, true)]))
        #expect(abs(summary.geometricMean - 1) < 1e-12)
        #expect(summary.low == 0.5 && summary.high == 2 && abs(summary.spread - 1.5) < 1e-12)
        #expect(abs(summary.oursFirst! - 2) < 1e-12 && abs(summary.fioFirst! - 0.5) < 1e-12)
        #expect(Calibration.RatioSummary([(1.0, false), (0, true)]) == nil, "a ratio of 0 is no measurement")
        #expect(Calibration.RatioSummary([(1.2, false)])?.fioFirst == nil)
    }

    /// The default pool is passed over, with the reason, when missing or too small for the run.
    @Test func unfitDefaultPoolIsPassedOverWithTheReason() throws {
        try TestSupport.withScratch("bench-unfit") { dir in
            #expect(try BenchWorkspace.defaultPoolUnfit(dir + "/none", minimumBytes: 1) == "no pool at \(dir)/none")
            let pool = try Pool.create(at: dir + "/pool", capacity: 8 << 20, measuringBandwidth: false)
            defer { try? pool.destroy() }
            #expect(try BenchWorkspace.defaultPoolUnfit(pool.path, minimumBytes: 8 << 20) == nil)
            #expect(try BenchWorkspace.defaultPoolUnfit(pool.path, minimumBytes: 9 << 20)
                    == "the pool at \(pool.path) has 8.0 MiB of reserve left, this run needs 9.0 MiB (9437184 bytes)")
        }
    }
}

/// The pool-size pre-check counts what captures hold ahead, and a run too short to reach the
/// disk says so (issue 28: `--streams 16 --duration 2.5` passed the check and failed at the
/// 16th start).
@Suite struct BenchPreCheckTests {
    /// A stream takes its frames, three grant steps and 16 MiB; the step is the capture's
    /// default for the bitrate and the pool's capacity.
    @Test func eachStreamNeedsItsFramesAndThreeGrants() {
        // 880 Mbit/s: two seconds (220 MB) a step in a large pool, a sixteenth of a small one.
        #expect(RunPlan.poolBytes(perStream: 1_000_000, bitrate: 880_000_000, capacity: 1 << 40)
                == 1_000_000 + 3 * 220_000_000 + (16 << 20))
        #expect(RunPlan.poolBytes(perStream: 1_000_000, bitrate: 880_000_000, capacity: 64 << 20)
                == 1_000_000 + 3 * (4 << 20) + (16 << 20))
    }

    @Test func aRunWithinTheBuffersWarns() {
        let short = RunPlan(streams: 1, bitrate: 880_000_000, fps: 25, sizes: .constant(bitrate: 880_000_000, fps: 25, count: 50),
                            scratchDirectory: "")
        let warning = short.shortRunWarning ?? ""
        #expect(warning.contains("nothing waits on the disk") && warning.contains("Run longer than 3.0 s"), "\(warning)")
        let long = RunPlan(streams: 1, bitrate: 880_000_000, fps: 25, sizes: .constant(bitrate: 880_000_000, fps: 25, count: 250),
                           scratchDirectory: "")
        #expect(long.shortRunWarning == nil)
    }

    /// 4 streams of 25 MB in a 256 MiB pool: their frames and 16 MiB each fit (the old check),
    /// their grants do not. The bench refuses before any capture starts and says to what size
    /// to grow the pool.
    @Test func grantsAreCountedBeforeAnyStart() throws {
        try TestSupport.withScratch { directory in
            let pool = try Pool.create(at: directory + "/pool", capacity: 256 << 20, measuringBandwidth: false)
            defer { try? pool.destroy() }
            let result = try TestSupport.run("provideo-bench", [
                "--pool", pool.path, "--streams", "4", "--bitrate", "400M", "--fps", "25", "--duration", "0.5", "--mode", "pool"])
            #expect(result.status == 1)
            #expect(result.stderr.contains("the grants each capture holds ahead"), "\(result.stderr)")
            #expect(result.stderr.range(of: #"resize [0-9]+M"#, options: .regularExpression) != nil, "\(result.stderr)")
            #expect(result.stderr.contains("nothing waits on the disk"), "0.5 s is within the buffers: \(result.stderr)")
            #expect(try pool.remainingCapacity == 256 << 20)
        }
    }
}

/// `provideo-bench size`: the search's steps, the segmented captures a trial records with,
/// and a whole (short) run.
@Suite struct SizingTests {
    /// From the estimate up by a quarter while trials pass, down by a quarter while they fail,
    /// then halving between the largest pass and the smallest failure.
    @Test func theSearchBisectsBetweenAPassAndAFailure() {
        let range = 1...64
        #expect(Sizing.nextCandidate(passed: nil, failed: nil, range: range, estimate: 12) == 12)
        #expect(Sizing.nextCandidate(passed: nil, failed: nil, range: range, estimate: 90) == 64)
        #expect(Sizing.nextCandidate(passed: nil, failed: nil, range: range, estimate: 0) == 1)
        #expect(Sizing.nextCandidate(passed: 12, failed: nil, range: range, estimate: 12) == 15)
        #expect(Sizing.nextCandidate(passed: 2, failed: nil, range: range, estimate: 2) == 3)
        #expect(Sizing.nextCandidate(passed: 64, failed: nil, range: range, estimate: 12) == nil)
        #expect(Sizing.nextCandidate(passed: nil, failed: 12, range: range, estimate: 12) == 9)
        #expect(Sizing.nextCandidate(passed: nil, failed: 1, range: range, estimate: 12) == nil)
        #expect(Sizing.nextCandidate(passed: 9, failed: 12, range: range, estimate: 12) == 10)
        #expect(Sizing.nextCandidate(passed: 10, failed: 12, range: range, estimate: 12) == 11)
        #expect(Sizing.nextCandidate(passed: 11, failed: 12, range: range, estimate: 12) == nil)
        // A whole search against a machine that records 11: it ends at 11, in few trials.
        var passed: Int?, failed: Int?, trials = 0
        while let n = Sizing.nextCandidate(passed: passed, failed: failed, range: range, estimate: 20) {
            trials += 1
            if n <= 11 { passed = max(passed ?? 0, n) } else { failed = min(failed ?? .max, n) }
        }
        #expect(passed == 11 && failed == 12 && trials <= 6, "\(trials) trials")
    }

    /// The answer is confirmed at length, stepping down a quarter and bisecting again below the
    /// search's answer: against a machine whose short trials pass 8 streams but whose long ones
    /// hold only 5, the confirmations run 8, 6 and 5, and the answer is 5 with 6 the smallest
    /// failure.
    @Test func theAnswerIsConfirmedAtLength() {
        var settings = Sizing.Settings(codec: nil, bitrate: 884_000_000, fps: 29.97, streams: 1...64,
                                       minimumTrial: 30_000_000_000, maximumTrial: 150_000_000_000)
        // A failure's first drop comes at 40 s, early in a 5-minute confirmation.
        func machine(short: Int, long: Int) -> (Int, Bool) -> Sizing.Trial {
            { streams, confirming in
                let passed = streams <= (confirming ? long : short)
                return Sizing.Trial(streams: streams, passed: passed, framesDropped: passed ? 0 : 3, framesLate: 0,
                                    firstDropSecond: passed ? nil : 40,
                                    appendLatencyNs: Percentiles.summary([1_000_000]),
                                    frameIntervalNs: 33_366_700, seconds: confirming ? 300 : 30, steady: true,
                                    deviceBytesPerSecond: nil, segments: 1, lateSwitches: 0, ended: passed ? "steady" : "dropped",
                                    confirming: confirming)
            }
        }
        func confirmations(_ result: (trials: [Sizing.Trial], passed: Int?, failed: Int?, confirmed: Bool?, budgetRanOut: Bool))
            -> [Int] {
            result.trials.filter(\.confirming).map(\.streams)
        }
        // No confirmation: the short trials' answer.
        let unconfirmed = Sizing.search(settings, estimate: 17, trial: machine(short: 11, long: 9))
        #expect(unconfirmed.passed == 11 && unconfirmed.failed == 12 && unconfirmed.confirmed == nil)
        #expect(confirmations(unconfirmed).isEmpty)

        settings.confirmationTrial = 300_000_000_000
        let host = Sizing.search(settings, estimate: 17, trial: machine(short: 8, long: 5))
        #expect(host.passed == 5 && host.failed == 6 && host.confirmed == true)
        #expect(confirmations(host) == [8, 6, 5])
        // Every confirmation comes after the search, which found 8 passing and 9 failing.
        let searched = host.trials.prefix { !$0.confirming }
        #expect(searched.count + 3 == host.trials.count)
        #expect(searched.contains { $0.streams == 8 && $0.passed } && searched.contains { $0.streams == 9 && !$0.passed })

        // A long trial that holds what the short ones passed: one confirmation.
        let atOnce = Sizing.search(settings, estimate: 17, trial: machine(short: 11, long: 11))
        #expect(atOnce.passed == 11 && atOnce.failed == 12 && atOnce.confirmed == true)
        #expect(confirmations(atOnce) == [11])

        // Four confirmations at most: 10 held and 12 failed, 11 was not tried.
        let capped = Sizing.search(settings, estimate: 17, trial: machine(short: 16, long: 10))
        #expect(capped.passed == 10 && capped.failed == 12 && confirmations(capped) == [16, 12, 9, 10])

        // None holds: four confirmations a quarter apart, the answer none.
        let never = Sizing.search(settings, estimate: 17, trial: machine(short: 11, long: 0))
        #expect(never.passed == nil && never.failed == 6 && never.confirmed == false)
        #expect(confirmations(never) == [11, 9, 7, 6])
        settings.streams = 2...64
        let floor = Sizing.search(settings, estimate: 2, trial: machine(short: 3, long: 0))
        #expect(confirmations(floor) == [3, 2] && floor.confirmed == false && floor.failed == 2)
        // Nothing passed: nothing to confirm.
        let none = Sizing.search(settings, estimate: 2, trial: machine(short: 0, long: 0))
        #expect(none.passed == nil && none.confirmed == nil && confirmations(none).isEmpty)
    }

    /// Once a number has held, a confirmation that drops late (in the last three quarters of
    /// 300 s, from 75 s) was just over the limit: one fewer is tried next, not the midpoint.
    /// With none held yet, a late drop steps down a quarter as an early one does.
    @Test func aLateDropTriesOneFewerOnceANumberHeld() {
        var settings = Sizing.Settings(codec: nil, bitrate: 884_000_000, fps: 29.97, streams: 1...64,
                                       minimumTrial: 30_000_000_000, maximumTrial: 150_000_000_000)
        settings.confirmationTrial = 300_000_000_000
        settings.confirmations = 5
        func machine(short: Int, long: Int, dropSecond: @escaping (Int) -> Int) -> (Int, Bool) -> Sizing.Trial {
            { streams, confirming in
                let passed = streams <= (confirming ? long : short)
                return Sizing.Trial(streams: streams, passed: passed, framesDropped: passed ? 0 : 2, framesLate: 0,
                                    firstDropSecond: passed ? nil : dropSecond(streams),
                                    firstRefusalSecond: passed ? nil : dropSecond(streams),
                                    appendLatencyNs: Percentiles.summary([1_000_000]), frameIntervalNs: 33_366_700,
                                    seconds: passed ? (confirming ? 300 : 30) : Double(dropSecond(streams) + 5), steady: true,
                                    deviceBytesPerSecond: nil, segments: 1, lateSwitches: 0, ended: passed ? "steady" : "dropped",
                                    confirming: confirming)
            }
        }
        func confirmations(_ result: (trials: [Sizing.Trial], passed: Int?, failed: Int?, confirmed: Bool?, budgetRanOut: Bool))
            -> [Int] { result.trials.filter(\.confirming).map(\.streams) }
        // 24 drops early (a quarter fewer: 18), 18 holds, 21 and 20 drop late, each followed by
        // one fewer (the midpoints would be 19, then 20), and 19 holds.
        let late = Sizing.search(settings, estimate: 24, trial: machine(short: 24, long: 19) { $0 >= 22 ? 10 : $0 == 21 ? 75 : 200 })
        #expect(confirmations(late) == [24, 18, 21, 20, 19] && late.passed == 19 && late.failed == 20 && late.confirmed == true)
        // 21 dropping at 74 s is early: the midpoint 19 next, then 20.
        let early = Sizing.search(settings, estimate: 24, trial: machine(short: 24, long: 19) { $0 >= 22 ? 10 : $0 == 21 ? 74 : 200 })
        #expect(confirmations(early) == [24, 18, 21, 19, 20] && early.passed == 19 && early.failed == 20)
        // None held: 8 dropping at 225 s steps a quarter down, to 6, as an early drop would.
        let none = Sizing.search(settings, estimate: 8, trial: machine(short: 8, long: 5) { _ in 225 })
        #expect(confirmations(none) == [8, 6, 5] && none.passed == 5 && none.failed == 6)
    }

    /// The answer names what the dropped frames waited for when every one waited for the same:
    /// a grant, the recorder's thread (the frames overwritten in the card's queue, with its
    /// latest wake-up, its longest append and the hypervisor's steal), or the disk (refused
    /// with every buffer in flight).
    @Test func theAnswerNamesTheDropsCause() {
        func trial(dropped: Int, awaitingGrant: Int = 0, overwritten: Int = 0, stolen: Double? = nil) -> Sizing.Trial {
            Sizing.Trial(streams: 1, passed: dropped == 0, framesDropped: dropped, framesAwaitingGrant: awaitingGrant,
                         framesOverwritten: overwritten, latestWakeUpNs: 136_400_000, cpuStolen: stolen, framesLate: 0,
                         firstDropSecond: dropped > 0 ? 49 : nil, appendLatencyNs: Percentiles.summary([5_800_000, 76_600_000]),
                         frameIntervalNs: 33_366_700, seconds: 54, steady: true, deviceBytesPerSecond: nil, segments: 6,
                         lateSwitches: 0, ended: dropped > 0 ? "dropped" : "steady", confirming: true)
        }
        let late = trial(dropped: 4, overwritten: 4, stolen: 0.116)
        #expect(late.dropCause == .late)
        #expect(Sizing.failure(of: late, queueFrames: 2) == "dropped 4 frames at 49 s (every one overwritten in the card's "
                + "queue of 2 frames while the recorder's thread was behind: it woke up to 136.4 ms late, and its longest "
                + "append took 76.6 ms; the hypervisor stole 12 % of the CPUs' time; no frame was refused for want of a buffer)")
        // Under 1 % of steal is not worth a mention.
        #expect(!Sizing.failure(of: trial(dropped: 4, overwritten: 4, stolen: 0.004), queueFrames: 2).contains("stole"))
        let grant = trial(dropped: 3, awaitingGrant: 3)
        #expect(grant.dropCause == .grant && Sizing.failure(of: grant, queueFrames: 2).hasSuffix("fell behind)"))
        let disk = trial(dropped: 1)
        #expect(disk.dropCause == .disk)
        #expect(Sizing.failure(of: disk, queueFrames: 2) == "dropped 1 frame at 49 s (every one refused with every buffer "
                + "in flight: the disk fell behind)")
        let mixed = trial(dropped: 5, awaitingGrant: 2, overwritten: 1)
        #expect(mixed.dropCause == .mixed && Sizing.failure(of: mixed, queueFrames: 2) == "dropped 5 frames at 49 s (4 "
                + "refused by the writers, 2 of them awaiting a grant; 1 overwritten in the card's queue)")
        #expect(trial(dropped: 0).dropCause == nil)
        // A take that could not start for an empty reserve: the returns behind the cuts, not a
        // bare "no remaining capacity" with the CLI's advice.
        var ranOut = trial(dropped: 0)
        ranOut.ended = "a capture failed: the pool has no remaining capacity: the running captures hold it"
        ranOut.reserveRanOut = true
        #expect(!ranOut.storagePassed)
        #expect(Sizing.failure(of: ranOut, queueFrames: 2) == "ran the pool's reserve out at 54 s: the bytes of the takes "
                + "given back were still on their way to it, so a take could not start or grow")
        var timings = GrantTimings()
        timings.cut.record(10_000_000_000)
        ranOut.grants = GrantSummary(timings)
        #expect(Sizing.failure(of: ranOut, queueFrames: 2).contains("(the reserve's cuts ran up to 1"),
                "\(Sizing.failure(of: ranOut, queueFrames: 2))")
    }

    /// The storage's limit and the host's are two answers: a trial whose only drops were
    /// overwritten in the card's queue (the recorder's thread late) counts for the storage's
    /// number and against the recorder's. Against a storage that carries 12 streams and a host
    /// whose recorder, with 2 frames of queue, holds 10, the search finds 12 (13 refused frames),
    /// the recorder held 10, and 12 needed 3 frames of queue (95.3 ms at 33.4 ms a frame).
    @Test func theStoragesLimitAndTheHostsAreToldApart() {
        let settings = Sizing.Settings(codec: nil, bitrate: 884_000_000, fps: 29.97, streams: 1...64,
                                       minimumTrial: 30_000_000_000, maximumTrial: 150_000_000_000)
        func trial(_ streams: Int, _ confirming: Bool) -> Sizing.Trial {
            let refused = streams > 12 ? 7 : 0, overwritten = streams > 10 ? 4 : 0
            return Sizing.Trial(streams: streams, passed: refused + overwritten == 0, framesDropped: refused + overwritten,
                                framesOverwritten: overwritten, latestWakeUpNs: overwritten > 0 ? 79_000_000 : 20_000_000,
                                latestTurnNs: overwritten > 0 ? 95_300_000 : 30_000_000, framesLate: 0,
                                firstDropSecond: overwritten > 0 ? 12 : nil, firstRefusalSecond: refused > 0 ? 20 : nil,
                                appendLatencyNs: Percentiles.summary([1_000_000]), frameIntervalNs: 33_366_700, seconds: 30,
                                steady: true, deviceBytesPerSecond: nil, segments: 1, lateSwitches: 0,
                                ended: refused > 0 ? "refused" : "steady", confirming: confirming)
        }
        let result = Sizing.search(settings, estimate: 17, trial: trial)
        #expect(result.trials.map(\.streams) == [17, 13, 10, 11, 12])
        #expect(result.passed == 12 && result.failed == 13)
        #expect(trial(11, false).storagePassed && !trial(11, false).passed && trial(11, false).dropCause == .late)
        let host = Sizing.hostLimit(trials: result.trials, storage: 12, confirmed: false)
        #expect(host.held == 10 && host.queueNeeded == 3 && host.turnNs == 95_300_000 && host.wakeUpNs == 79_000_000)
        #expect(Sizing.hostClause(host, storage: trial(12, false), name: "prores", queueFrames: 2)
                == "the storage carries 12 streams of prores (no frame refused over 30 s); on this host the recorder's "
                + "thread woke up to 79.0 ms late and turned to a frame up to 95.3 ms after it was due, so a recorder "
                + "needs an input queue of at least 3 frames for 12; with 2 frames it held 10")
        // A recorder that held the storage's number too: the plain answer.
        let quiet = Sizing.hostLimit(trials: [trial(9, false), trial(10, false)], storage: 10, confirmed: false)
        #expect(quiet.held == 10 && quiet.queueNeeded == 1)
        #expect(Sizing.hostClause(quiet, storage: trial(10, false), name: "prores", queueFrames: 2) == nil)
        // A capture that failed fails the storage, whatever was dropped.
        var failed = trial(5, false)
        failed.ended = "a capture failed: the pool has no remaining capacity"
        #expect(!failed.storagePassed)
    }

    /// Confirmations after the first start only if they can end by the deadline: the search
    /// and one failed confirmation leave no time for a second 5-minute one inside 6 minutes,
    /// and the report says so instead of running past the budget.
    @Test func confirmationsStopAtTheBudget() {
        var settings = Sizing.Settings(codec: nil, bitrate: 884_000_000, fps: 29.97, streams: 1...64,
                                       minimumTrial: 30_000_000_000, maximumTrial: 150_000_000_000)
        settings.confirmationTrial = 300_000_000_000
        var clock: UInt64 = 0
        func trial(_ streams: Int, _ confirming: Bool) -> Sizing.Trial {
            let passed = streams <= (confirming ? 5 : 8)
            let seconds: Double = passed ? (confirming ? 300 : 30) : 45
            clock += UInt64(seconds * 1e9)
            return Sizing.Trial(streams: streams, passed: passed, framesDropped: passed ? 0 : 2, framesLate: 0,
                                firstDropSecond: passed ? nil : 40, appendLatencyNs: Percentiles.summary([1_000_000]),
                                frameIntervalNs: 33_366_700, seconds: seconds, steady: true, deviceBytesPerSecond: nil,
                                segments: 1, lateSwitches: 0, ended: passed ? "steady" : "dropped", confirming: confirming)
        }
        // Unlimited: 8 fails, 6 fails, 5 holds.
        let unlimited = Sizing.search(settings, estimate: 8, now: { clock }, trial: trial)
        #expect(unlimited.trials.filter(\.confirming).map(\.streams) == [8, 6, 5] && !unlimited.budgetRanOut)
        // The search (8 passes, 9 and 10 fail: 120 s) and 8's failure (45 s) leave 195 s of 6 min,
        // less than a confirmation and its 20 s of overhead.
        clock = 0
        settings.deadline = 360_000_000_000
        let limited = Sizing.search(settings, estimate: 8, now: { clock }, trial: trial)
        #expect(limited.trials.filter(\.confirming).map(\.streams) == [8])
        #expect(limited.budgetRanOut && limited.passed == nil && limited.failed == 8 && limited.confirmed == false)
        // A deadline exactly a confirmation and its overhead away lets the next one run; a
        // nanosecond less does not.
        clock = 0
        settings.deadline = 165_000_000_000 + 320_000_000_000
        let exact = Sizing.search(settings, estimate: 8, now: { clock }, trial: trial)
        #expect(exact.trials.filter(\.confirming).map(\.streams) == [8, 6] && exact.budgetRanOut)
        clock = 0
        settings.deadline! -= 1
        #expect(Sizing.search(settings, estimate: 8, now: { clock }, trial: trial).trials.filter(\.confirming).count == 1)
        // The first confirmation runs even past the deadline: without it there is no answer at length.
        clock = 0
        settings.deadline = 1
        let first = Sizing.search(settings, estimate: 8, now: { clock }, trial: trial)
        #expect(first.trials.filter(\.confirming).map(\.streams) == [8] && first.budgetRanOut)
        // What the answer says the budget left.
        #expect(Sizing.budgetClause(held: 3, failed: 8, floor: 1) == "the time budget (--budget-minutes) left 4 to 7 unconfirmed")
        #expect(Sizing.budgetClause(held: 3, failed: 5, floor: 1) == "the time budget (--budget-minutes) left 4 unconfirmed")
        #expect(Sizing.budgetClause(held: nil, failed: 8, floor: 1) == "the time budget (--budget-minutes) left 1 to 7 unconfirmed")
        #expect(Sizing.budgetClause(held: nil, failed: 2, floor: 1) == "the time budget (--budget-minutes) left 1 unconfirmed")
        #expect(Sizing.budgetClause(held: 10, failed: 12, floor: 1, by: "the 4 confirmations allowed")
                == "the 4 confirmations allowed left 11 unconfirmed")
    }

    /// A stream split into takes: it switches captures, never holds more than its takes, and
    /// gives every byte of capacity back.
    @Test func segmentedCapturesSwitchAndGiveTheirCapacityBack() throws {
        try TestSupport.withScratch { directory in
            let pool = try Pool.create(at: directory + "/pool", capacity: 128 << 20, measuringBandwidth: false)
            defer { try? pool.destroy() }
            let frame = try AlignedMemory(length: 1 << 20, alignment: 4096)
            let options = CaptureOptions(bitrate: 80_000_000, overrunPolicy: .wait(nanoseconds: 10_000_000_000), grantSize: 4 << 20)
            let writer = try SegmentedPoolWriter(pool: pool, destination: directory + "/take", options: options,
                                                 segmentBytes: 8 << 20, firstSegmentBytes: 4 << 20, leadBytes: 6 << 20)
            // Frames until three takes have been switched to, then close: 80 MiB at most, which
            // the pool holds with the grants. A start's time is the machine's (under the whole
            // suite on 2 cores, two starts took longer than 80 frames 5 ms apart), so a late
            // switch leaves the worker 50 ms before the next frame.
            var frames = 0
            while writer.segments < 3 && frames < 80 {
                let late = writer.lateSwitches
                #expect(try writer.append(UnsafeRawBufferPointer(frame.bytes)))
                frames += 1
                usleep(writer.lateSwitches > late ? 50_000 : 5_000)
                #expect(try pool.status().captures.count <= 3)
            }
            try writer.close()
            #expect(writer.segments >= 3, "\(writer.segments) takes, \(writer.lateSwitches) late switches in \(frames) MiB")
            #expect(writer.failure == nil)
            #expect(try pool.status().captures.isEmpty)
            #expect(try pool.remainingCapacity == 128 << 20)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == ["pool"])
        }
    }

    /// A short search into a small pool at 40 Mbit/s, searching 1…2 streams: its answer is the
    /// largest number whose confirmation the storage held, each trial's verdicts follow from its
    /// own figures (the recorder's: no drop, p99.9 under a frame interval; the storage's: no
    /// refusal, no capture failed), and the pool is whole afterwards. Whether 2
    /// pass is the disk's business (other tests share it), so both outcomes are checked.
    @Test func aShortSearchAnswersInOneSentence() throws {
        try TestSupport.withScratch { directory in
            // Two streams' takes, the ones on their way back and the grants ahead (about 250 MB
            // each at 40 Mbit/s, `Sizing.Settings.poolBytesPerStream`), so that 2 is tried.
            let pool = try Pool.create(at: directory + "/pool", capacity: 576 << 20, measuringBandwidth: false)
            defer { try? pool.destroy() }
            let result = try TestSupport.run("provideo-bench", [
                "--pool", pool.path, "size", "--bitrate", "40M", "--fps", "25", "--minutes", "0.03", "--streams-max", "2",
                "--confirm-minutes", "0.05", "--realtime", "off", "--input-queue", "3", "--json", "--plot", directory + "/size.svg"])
            #expect(result.status == 0, "\(result.stderr)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
            let trials = object["trials"] as? [[String: Any]] ?? []
            #expect(!trials.isEmpty && trials.allSatisfy { ($0["streams"] as? Int).map { (1...2).contains($0) } ?? false })
            for trial in trials {
                let p999 = (trial["appendLatencyNs"] as? [String: Any])?["p999"] as? Int ?? .max
                let verdict = trial["framesDropped"] as? Int == 0 && p999 < trial["frameIntervalNs"] as? Int ?? 0
                #expect(trial["passed"] as? Bool == verdict, "\(trial)")
            }
            func storagePassed(_ trial: [String: Any]) -> Bool {
                trial["framesDropped"] as? Int == trial["framesOverwritten"] as? Int
                    && !(trial["ended"] as? String ?? "").hasPrefix("a capture failed")
            }
            // The answer is the confirmation that held (3 s each), after the search's passes.
            let confirmations = trials.filter { $0["confirming"] as? Bool == true }
            let searchPassed = trials.contains { $0["confirming"] as? Bool == false && storagePassed($0) }
            #expect(confirmations.isEmpty == !searchPassed, "\(trials)")
            let confirmed = confirmations.filter(storagePassed).compactMap { $0["streams"] as? Int }
            let streams = try #require(object["streams"] as? Int)
            #expect(streams == confirmed.max() ?? 0)
            #expect(confirmations.allSatisfy { ($0["seconds"] as? Double ?? 0) >= 2.5 || $0["passed"] as? Bool == false })
            #expect(object["confirmed"] as? Bool == (searchPassed ? streams > 0 : nil))
            #expect(object["realtimePriority"] == nil)
            #expect(object["inputQueueFrames"] as? Int == 3, "the stated input queue: \(String(describing: object["inputQueueFrames"]))")
            let answer = object["answer"] as? String ?? ""
            if streams == 2 {
                let held = object["recorderHeld"] as? Int == 2
                #expect(answer.hasPrefix(held ? "2 streams of 40 Mbit/s at 25.0 fps: 0 dropped over "
                                         : "the storage carries 2 streams of 40 Mbit/s at 25.0 fps (no frame refused over ")
                        && answer.hasSuffix("(--streams-max 2)"), "\(answer)")
                let svg = try String(contentsOfFile: directory + "/size.svg", encoding: .utf8)
                #expect(svg.contains(">2 streams</text>"))
            } else {
                #expect(object["failedAt"] as? Int == streams + 1, "\(answer)")
                #expect(answer.contains("; \(streams + 1) "), "\(answer)")
            }
            #expect(try pool.remainingCapacity == 576 << 20)
        }
    }

    @Test(arguments: [
        (["size"], "size needs --codec NAME, or --bitrate RATE (with --fps FPS, default 25"),
        (["size", "--codec", "prores-9"], "unknown codec 'prores-9'"),
        (["size", "--codec", "prores-422-hq-2160p29.97", "--bitrate", "800M"], "size needs --codec NAME, or --bitrate"),
        (["size", "--codec", "prores-422-hq-2160p29.97", "--minutes", "0"], "--minutes must be from 0.01 to 60"),
        (["size", "--codec", "prores-422-hq-2160p29.97", "--streams-min", "4", "--streams-max", "2"], "--streams-max must be from"),
        (["size", "--codec", "prores-422-hq-2160p29.97", "--noise", "land"], "--noise land needs --land-to"),
        (["size", "--codec", "prores-422-hq-2160p29.97", "--confirm-minutes", "61"], "--confirm-minutes must be 0 (none)"),
        (["size", "--codec", "prores-422-hq-2160p29.97", "--realtime", "100"], "--realtime is a SCHED_FIFO priority from 1"),
        (["size", "--codec", "prores-422-hq-2160p29.97", "--budget-minutes", "0.5"], "--budget-minutes must be 0 (no limit)"),
        (["size", "--codec", "prores-422-hq-2160p29.97", "--input-queue", "0"], "--input-queue must be from 1 to 1000 frames"),
    ])
    func badSizeArgumentsAreUsageErrors(_ arguments: [String], _ message: String) throws {
        let result = try TestSupport.run("provideo-bench", arguments)
        #expect(result.status == 2)
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }
}

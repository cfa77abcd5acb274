import Foundation
import ProVideoStorage

/// "How many streams of this codec can this machine record?": trials of N concurrent pool
/// captures, each long enough to pass the device's write cache, bisected from the pool's
/// sustained bandwidth to the largest N with no dropped frame and an append p99.9, over every
/// stream's appends, under one frame interval, then confirmed by trials of minutes, bisected
/// again below it while they fail (`provideo-bench size`, Docs/BENCHMARKS.md "How to size a machine").
package enum Sizing {
    package struct Settings: Sendable {
        /// The codec's name, for the report (nil: `--bitrate`/`--fps` given).
        package var codec: String?
        /// Each stream's rate, bits per second.
        package var bitrate: Int64
        package var fps: Double
        /// The range searched, in streams.
        package var streams: ClosedRange<Int>
        /// A trial runs at least this long, in nanoseconds (30 s by default), then until the
        /// device's write rate is steady (`SteadyRate`), at most `maximumTrial`.
        package var minimumTrial: UInt64
        package var maximumTrial: UInt64
        /// Nanoseconds of stream per take (`SegmentedPoolWriter`).
        package var segment: UInt64 = 8_000_000_000
        package var inputQueueFrames = 2
        /// After the search, its answer is confirmed by trials of this many nanoseconds
        /// (`nextConfirmation`), at most `confirmations` of them (0 ns: no confirmation). A
        /// neighbour that stalls the device every minute or two passes a 30-s trial that a
        /// 5-min one does not.
        package var confirmationTrial: UInt64 = 0
        package var confirmations = 4
        /// A confirmation after the first starts only if it, and `trialOverhead`, can end by
        /// this instant on the monotonic clock, nanoseconds (nil: no limit): the answer comes
        /// about when the user asked (`--budget-minutes`, 15 by default), with what held and
        /// failed by then. The search and the first confirmation run whatever the time.
        package var deadline: UInt64?
        /// Nanoseconds a trial costs beyond its length: its captures' starts, their cancels, and
        /// the settling after it (`settle`: a sync and 5 s).
        package var trialOverhead: UInt64 = 20_000_000_000
        /// The recorder threads' `SCHED_FIFO` priority, as a capture application runs the thread
        /// that takes frames from the card (nil: the default policy).
        package var realtimePriority: Int32?
        /// Why the search stops at `streams.upperBound`, for the answer ("--streams-max 6",
        /// "what the pool holds").
        package var upperBoundReason = "--streams-max"

        package init(codec: String?, bitrate: Int64, fps: Double, streams: ClosedRange<Int>, minimumTrial: UInt64,
                     maximumTrial: UInt64) {
            self.codec = codec
            self.bitrate = bitrate
            self.fps = fps
            self.streams = streams
            self.minimumTrial = minimumTrial
            self.maximumTrial = maximumTrial
        }

        /// Bytes of stream per take.
        package var segmentBytes: Int64 { Int64(Double(bitrate) / 8 * Double(segment) / 1e9) }

        /// The captures' options: frames refused when every buffer is in flight (a live
        /// source cannot wait), admitted whatever the pool's bandwidth (the trial looks for
        /// the limit), and otherwise a recorder's defaults. (Grants of one second, half the
        /// default, made even one stream drop beside the noise writer: a grant waits for the
        /// filesystem's journal, and one second ahead did not cover the wait.)
        package var captureOptions: CaptureOptions {
            CaptureOptions(bitrate: bitrate, overrunPolicy: .fail, admitOverBandwidth: true)
        }

        /// Reserve bytes one stream takes: the take it writes and the one before it (a cancelled
        /// take's bytes return to the reserve under its size lock, behind the cuts in flight:
        /// up to 10.7 s with online discard, and without this allowance a 20-stream
        /// confirmation ran its 64.6 GiB pool out at 36 s, 2026-12-06), three times what its
        /// capture holds ahead (`CaptureOptions.bytesHeldAhead`: its own, the next capture's,
        /// and a lead grown after slow grants), and 16 MiB for padding and rounding.
        package func poolBytesPerStream(capacity: Int64) -> Int64 {
            2 * segmentBytes + 3 * captureOptions.bytesHeldAhead(unit: 1, capacity: capacity) + (16 << 20)
        }

        /// The capacity of a scratch pool for at most `wanted` streams on a filesystem with
        /// `free` bytes, in bytes: room is left for the neighbour's file (`noiseBytes`), 4 GiB
        /// to spare, and each stream's grants in flight (a grant allocates in the capture's file
        /// before it cuts the reserve, so until the cut the filesystem holds both:
        /// `ReserveGrants.allocate`): a step for each of its two captures, and its share of the
        /// leads, which may all await their cuts (at most an eighth of the pool, `GrantLead`;
        /// cuts ran up to 8.9 s behind with online discard, and with only the two steps a
        /// 22-stream trial met ENOSPC, 2026-12-06). Without that room the filesystem fills
        /// during the trials, and grants and the neighbour meet ENOSPC: the answer would
        /// measure a full disk. At least 64 MiB.
        package func scratchPoolBytes(free: Int64, noiseBytes: Int64, wanted: Int) -> Int64 {
            let perStream = poolBytesPerStream(capacity: .max)
            let inFlight = 2 * captureOptions.grantStep(unit: 1, capacity: .max) + perStream / 8
            let fits = max(free - noiseBytes - (4 << 30), 0) / (perStream + inFlight)
            return max(min(Int64(wanted), fits) * perStream, 64 << 20)
        }
    }

    /// One trial: `streams` captures at once.
    package struct Trial: Codable, Sendable {
        package var streams: Int
        /// The recorder held: no frame dropped (refused, or overwritten in the card's queue), no
        /// capture failed, and the append p99.9 over every stream's appends under one frame
        /// interval. The storage's verdict is `storagePassed`.
        package var passed: Bool
        package var framesDropped: Int
        /// Of the frames dropped, those refused because their take's file was not yet granted
        /// that far: the filesystem's fallocate, not the disk's writes, was behind.
        package var framesAwaitingGrant: Int = 0
        /// Of the frames dropped, those the recorder's thread reached only after the capture
        /// card's queue (`Settings.inputQueueFrames`) had overwritten them: the thread fell
        /// behind the card, waking late or in a long append (`FrameAccounting`). The rest were
        /// refused.
        package var framesOverwritten: Int = 0
        /// The latest the recorder's thread began a frame after it was due, nanoseconds.
        package var latestWakeUpNs: UInt64 = 0
        /// The longest a frame waited past its due time for the recorder's thread, nanoseconds
        /// (`SimulatedRecorder.latestTurn`): the card's queue it would have needed.
        package var latestTurnNs: UInt64 = 0
        /// The share of CPU time the hypervisor stole over the trial (`CPUSteal`), 0 to 1; nil
        /// where the kernel does not say.
        package var cpuStolen: Double?
        package var framesLate: Int
        /// Seconds from the first frame to the first drop, to one second.
        package var firstDropSecond: Int?
        /// Seconds from the first frame to the first frame a writer refused, to one second.
        package var firstRefusalSecond: Int?
        package var appendLatencyNs: LatencySummary
        package var frameIntervalNs: UInt64
        package var seconds: Double
        /// Whether the device's write rate was steady when the trial ended.
        package var steady: Bool
        /// The device's write rate over the trial's last 10 s, bytes per second, of every writer
        /// (the neighbour's too: the block device's counters do not tell writers apart; nil:
        /// the pool is on no block device).
        package var deviceBytesPerSecond: Double?
        /// Takes recorded, and switches that found the next capture not ready.
        package var segments: Int
        package var lateSwitches: Int
        /// Starts of a next take the pool refused for want of capacity (the stream went on in
        /// its take: `SegmentedPoolWriter.startsRefused`).
        package var startsRefused = 0
        /// "steady", "refused" (five seconds after a writer refused a frame), "longest trial",
        /// or "a capture failed: …" (a take that could not start, a full pool).
        package var ended: String
        /// Whether the capture that failed found the pool's reserve empty (`.notEnoughSpace`,
        /// `.storageFull`): the takes given back had not reached it yet.
        package var reserveRanOut = false
        /// Whether this trial confirmed the search's answer at length (`confirmationTrial`).
        package var confirming = false
        /// Its grants' latencies and leads at landing, every stream's together (issue 44).
        package var grants: GrantSummary?

        /// Of the frames dropped, those the writers refused: the storage's, where the rest are
        /// the recorder's thread's.
        package var framesRefused: Int { framesDropped - framesOverwritten }

        /// Frames of card queue that would have kept every frame of this trial: its longest wait
        /// for the recorder's thread in frame intervals, rounded up (a floor: a recorder that
        /// had queued the overwritten frames would have had more to write).
        package var inputQueueNeeded: Int {
            let interval = max(frameIntervalNs, 1)
            return max(1, Int((latestTurnNs + interval - 1) / interval))
        }

        /// The storage kept up: no capture failed and no frame was refused, whatever the
        /// recorder's thread lost in the card's queue (a trial whose only drops are from late
        /// wake-ups counts for the storage and against the host).
        package var storagePassed: Bool { !ended.hasPrefix("a capture failed") && framesRefused == 0 }

        /// What the dropped frames waited for; nil when none dropped.
        package var dropCause: DropCause? {
            if framesDropped == 0 { return nil }
            if framesAwaitingGrant == framesDropped { return .grant }
            if framesOverwritten == framesDropped { return .late }
            if framesAwaitingGrant == 0 && framesOverwritten == 0 { return .disk }
            return .mixed
        }

        /// A storage failure in the last three quarters of a confirmation of `length`
        /// nanoseconds: a stall that rare puts the number just over what the storage holds, so
        /// once a smaller number has held, one fewer is tried next (`nextConfirmation`).
        func failedLate(length: UInt64) -> Bool {
            guard !storagePassed, let second = firstRefusalSecond else { return false }
            return UInt64(second) * 4_000_000_000 >= length
        }
    }

    /// What a failing trial's dropped frames waited for, when every one waited for the same.
    package enum DropCause: String, Codable, Sendable {
        /// Refused because the take's file was not yet granted that far: the filesystem's
        /// fallocate fell behind.
        case grant
        /// Overwritten in the card's queue: the recorder's thread fell behind the card (it woke
        /// late, or an append ran long) while no frame was refused for want of a buffer.
        case late
        /// Refused with every buffer in flight, the file granted: the disk fell behind.
        case disk
        case mixed
    }

    package struct Report: Codable, Sendable {
        package var codec: String?
        package var bitrate: Int64
        package var fps: Double
        package var noise: String
        /// The pool's measurement the search started from.
        package var bandwidth: BandwidthMeasurement
        /// Streams the sustained bandwidth carries at the stream's rate, before any trial.
        package var estimate: Int
        /// The largest number of streams the storage carried (`Trial.storagePassed`; 0: none).
        package var streams: Int
        /// The smallest number the storage failed, nil when it carried every number tried.
        package var failedAt: Int?
        /// The largest number, at most `streams`, whose trial the recorder held with
        /// `inputQueueFrames` of queue (`Trial.passed`), among the trials that gave `streams`
        /// (the confirmations when they ran); nil when none did.
        package var recorderHeld: Int?
        /// Frames of card queue the trials at `streams` needed to lose none: their longest
        /// wait for the recorder's thread in frame intervals, rounded up (nil: no such trial).
        package var inputQueueNeeded: Int?
        package var searched: ClosedRange<Int>
        /// Whether `streams` held through a confirmation trial; nil when none ran.
        package var confirmed: Bool?
        /// Whether a confirmation was left out because it could not end within the budget.
        package var budgetRanOut = false
        /// Whether the pool's filesystem is mounted with online discard (nil: not known), which
        /// the answer depends on: `StorageFacts.mountedWithDiscard`.
        package var mountedWithDiscard: Bool?
        /// How the pool's grants moved the reserve's space during the trials (`GrantMethod`).
        package var grants: GrantMethod? = nil
        /// The pool's filesystem's online discard, what it costs and the remedies; nil without.
        package var onlineDiscard: OnlineDiscard? = nil
        /// The recorder threads' `SCHED_FIFO` priority (nil: the default policy).
        package var realtimePriority: Int32?
        /// Frames each recorder holds between its capture card and its writer (`--input-queue`).
        package var inputQueueFrames: Int
        package var trials: [Trial]
        package var seconds: Double
        package var answer: String
    }

    /// The next number of streams to try, nil when the answer is known: between the largest
    /// that passed and the smallest that failed, halving; with only passes, 25 % more; with
    /// only failures, 25 % fewer; with neither, the estimate.
    package static func nextCandidate(passed: Int?, failed: Int?, range: ClosedRange<Int>, estimate: Int) -> Int? {
        switch (passed, failed) {
        case let (pass?, fail?):
            return fail - pass > 1 ? (pass + fail) / 2 : nil
        case let (pass?, nil):
            return pass >= range.upperBound ? nil : min(range.upperBound, pass + max(1, pass / 4))
        case let (nil, fail?):
            return fail <= range.lowerBound ? nil : max(range.lowerBound, fail - max(1, fail / 4))
        case (nil, nil):
            return min(max(estimate, range.lowerBound), range.upperBound)
        }
    }

    /// The search for the storage's limit, apart from running trials: bisection with
    /// `trial(streams, false)`, then confirmations with `trial(streams, true)` from the largest
    /// pass (`nextConfirmation`), those after the first only while they can end by
    /// `settings.deadline` on `now`. `passed` is the largest number the storage carried
    /// (`Trial.storagePassed`; held, when confirmations run), `failed` the smallest it did not,
    /// the confirmations' failures included.
    package static func search(_ settings: Settings, estimate: Int, now: () -> UInt64 = MonotonicClock.nanoseconds,
                               trial: (_ streams: Int, _ confirming: Bool) throws -> Trial)
        rethrows -> (trials: [Trial], passed: Int?, failed: Int?, confirmed: Bool?, budgetRanOut: Bool) {
        var trials: [Trial] = []
        var passed: Int?, failed: Int?
        while let streams = nextCandidate(passed: passed, failed: failed, range: settings.streams, estimate: estimate) {
            let result = try trial(streams, false)
            trials.append(result)
            if result.storagePassed { passed = max(passed ?? 0, streams) } else { failed = min(failed ?? .max, streams) }
        }
        guard settings.confirmationTrial > 0, var candidate = passed else { return (trials, passed, failed, nil, false) }
        var held: Int?
        for index in 0..<settings.confirmations {
            if index > 0, let deadline = settings.deadline,
               now() + settings.confirmationTrial + settings.trialOverhead > deadline {
                return (trials, held, failed, held != nil, true)
            }
            let result = try trial(candidate, true)
            trials.append(result)
            if result.storagePassed { held = candidate } else { failed = min(failed ?? .max, candidate) }
            guard let next = nextConfirmation(held: held, failed: failed, lastFailedLate:
                                                result.failedLate(length: settings.confirmationTrial),
                                              floor: settings.streams.lowerBound) else { break }
            candidate = next
        }
        return (trials, held, failed, held != nil, false)
    }

    /// The next number to confirm, nil when the answer is known. With no number held yet, a
    /// quarter fewer than the last failure (at least one), never below `floor`, as the search
    /// steps down: the storage held at length three quarters or more of what its short trials
    /// passed (16 and 15 failed, 12 held, beside the noise writer, 2026-12-07), and halving
    /// made two runs answer 12 and 7 within the budget. (Halving was for the host's stalls,
    /// which took half of that and more, and which no longer fail the storage's trials.) Once
    /// one has held: one fewer than a late failure (`Trial.failedLate`), which closes the gap
    /// at once if that number holds; else halfway.
    static func nextConfirmation(held: Int?, failed: Int?, lastFailedLate: Bool, floor: Int) -> Int? {
        switch (held, failed) {
        case let (held?, failed?):
            guard failed - held > 1 else { return nil }
            return lastFailedLate ? failed - 1 : (held + failed) / 2
        case let (nil, failed?):
            return failed > floor ? max(floor, failed - max(1, failed / 4)) : nil
        default: return nil
        }
    }

    /// What stopped the confirmations (`by`: the budget, or their number) left, for the answer:
    /// the numbers between the largest that held (or below `floor`) and the smallest that failed.
    static func budgetClause(held: Int?, failed: Int?, floor: Int, by limit: String = "the time budget (--budget-minutes)")
        -> String {
        let low = held.map { $0 + 1 } ?? floor, high = (failed ?? low + 1) - 1
        let numbers = high <= low ? "\(low)" : "\(low) to \(high)"
        return "\(limit) left \(numbers) unconfirmed"
    }

    /// Runs the search. `bandwidth` is the pool's measurement, `directory` a scratch directory
    /// on the pool's filesystem (the takes' destinations; every take is cancelled).
    /// - Returns: the report, and the runs of the answer's trial and of the smallest number
    ///   that failed (those that exist).
    package static func run(_ settings: Settings, pool: Pool, directory: String, bandwidth: BandwidthMeasurement,
                            noise: String, log: (String) -> Void) throws -> (Report, [ModeRun]) {
        let started = MonotonicClock.nanoseconds()
        let estimate = Int(Double(bandwidth.sustained) / Double(settings.bitrate))
        // Each number's latest run: the plot draws the answer's and the smallest failure's.
        var runs: [Int: ModeRun] = [:]
        let (trials, passed, failed, confirmed, budgetRanOut) = try search(settings, estimate: estimate) { streams, confirming in
            let (trial, run) = try self.trial(streams: streams, confirming: confirming, settings: settings, pool: pool,
                                              directory: directory, log: log)
            runs[streams] = run
            try Interruption.check()
            settle()
            return trial
        }
        let name = settings.codec ?? "\(BitRateFormat.human(settings.bitrate)) at \(settings.fps) fps"
        let best = passed.flatMap { count in trials.last { $0.streams == count } }
        let worst = failed.flatMap { count in trials.last { $0.streams == count } }
        let unconfirmed = trials.filter(\.confirming).map(\.streams)
        let host = passed.map { hostLimit(trials: trials, storage: $0, confirmed: confirmed != nil) }
        var answer = best.map { best in
            host.flatMap { host in
                hostClause(host, storage: best, name: name, queueFrames: settings.inputQueueFrames)
            } ?? "\(best.streams) stream\(best.streams == 1 ? "" : "s") of \(name): 0 dropped over " + minutes(best.seconds)
        }
            ?? (confirmed == false ? "no number of streams of \(name) held through "
                + "\(minutes(Double(settings.confirmationTrial) / 1e9)) (tried "
                + unconfirmed.map(String.init).joined(separator: ", ") + " after shorter trials passed \(unconfirmed.first ?? 0))"
                : "not even \(settings.streams.lowerBound) stream(s) of \(name) passed")
        if let worst {
            answer += "; \(worst.streams) " + failure(of: worst, queueFrames: settings.inputQueueFrames)
        } else if let best, best.streams == settings.streams.upperBound {
            answer += "; more were not tried (\(settings.upperBoundReason))"
        }
        if budgetRanOut {
            answer += "; " + budgetClause(held: passed, failed: failed, floor: settings.streams.lowerBound)
        } else if unconfirmed.count == settings.confirmations, let held = passed, let failed, failed - held > 1 {
            answer += "; " + budgetClause(held: held, failed: failed, floor: settings.streams.lowerBound,
                                          by: "the \(settings.confirmations) confirmations allowed")
        }
        let report = Report(codec: settings.codec, bitrate: settings.bitrate, fps: settings.fps, noise: noise,
                            bandwidth: bandwidth, estimate: estimate, streams: passed ?? 0, failedAt: failed,
                            recorderHeld: host?.held, inputQueueNeeded: host?.queueNeeded,
                            searched: settings.streams, confirmed: confirmed, budgetRanOut: budgetRanOut,
                            mountedWithDiscard: StorageFacts.mountedWithDiscard(pool.path),
                            grants: pool.grantMethod,
                            onlineDiscard: OnlineDiscard.of(pool.path, grantsByExchange: pool.grantMethod == .extentExchange),
                            realtimePriority: settings.realtimePriority, inputQueueFrames: settings.inputQueueFrames,
                            trials: trials,
                            seconds: Double(MonotonicClock.nanoseconds() - started) / 1e9, answer: answer)
        return (report, [passed, failed].compactMap { $0.flatMap { runs[$0] } })
    }

    /// What the recorder's thread held on this host beside the storage's number.
    struct HostLimit {
        /// The largest number, at most the storage's, whose trial the recorder held; nil: none.
        var held: Int?
        /// The card's queue, in frames, that the trials at the storage's number needed.
        var queueNeeded: Int
        /// Their longest wait of a frame for the thread, and latest wake-up, nanoseconds.
        var turnNs: UInt64
        var wakeUpNs: UInt64
    }

    /// The host's limit beside the storage's `storage` streams, from the confirmations
    /// (`confirmed`) or else the search's trials.
    static func hostLimit(trials: [Trial], storage: Int, confirmed: Bool) -> HostLimit {
        let kind = trials.filter { $0.confirming == confirmed }
        let atStorage = kind.filter { $0.streams == storage }
        return HostLimit(held: kind.filter { $0.passed && $0.streams <= storage }.map(\.streams).max(),
                         queueNeeded: atStorage.map(\.inputQueueNeeded).max() ?? 1,
                         turnNs: atStorage.map(\.latestTurnNs).max() ?? 0, wakeUpNs: atStorage.map(\.latestWakeUpNs).max() ?? 0)
    }

    /// The answer's first clause when the recorder's thread, not the storage, lost frames at the
    /// storage's number: "the storage carries 12 streams of …; on this host …, so a recorder
    /// needs an input queue of at least 4 frames for 12; with 2 frames it held 10". Nil when the
    /// recorder held the storage's number too.
    static func hostClause(_ host: HostLimit, storage: Trial, name: String, queueFrames: Int) -> String? {
        guard host.held != storage.streams else { return nil }
        let count = storage.streams
        let held = host.held.map { "it held \($0)" } ?? "it held none of the numbers tried"
        return "the storage carries \(count) stream\(count == 1 ? "" : "s") of \(name) (no frame refused over "
            + "\(minutes(storage.seconds))); on this host the recorder's thread woke up to \(milliseconds(host.wakeUpNs)) "
            + "late and turned to a frame up to \(milliseconds(host.turnNs)) after it was due, so a recorder needs an input "
            + "queue of at least \(host.queueNeeded) frames for \(count); with \(queueFrames) frame\(queueFrames == 1 ? "" : "s") "
            + held
    }

    /// How the smallest failing trial failed, for the answer: "dropped 4 frames at 49 s (every
    /// one …)" naming the cause when every drop had the same one.
    static func failure(of trial: Trial, queueFrames: Int) -> String {
        if trial.reserveRanOut {
            let cuts = trial.grants.map { " (the reserve's cuts ran up to \(String(format: "%.1f s", Double($0.cutNs.max) / 1e9)) "
                + "behind; on a `discard` mount each waits for the device's discards)" } ?? ""
            return "ran the pool's reserve out at \(String(format: "%.0f", trial.seconds)) s: the bytes of the takes given back "
                + "were still on their way to it\(cuts), so a take could not start or grow"
        }
        if trial.ended.hasPrefix("a capture failed") { return "failed: " + trial.ended.dropFirst("a capture failed: ".count) }
        guard trial.framesDropped > 0 else {
            return "dropped none but an append p99.9 took \(milliseconds(trial.appendLatencyNs.p999)), over one frame interval"
        }
        let when = trial.firstDropSecond.map { "at \($0) s" } ?? "in its last second"
        let dropped = "dropped \(trial.framesDropped) frame\(trial.framesDropped == 1 ? "" : "s") \(when)"
        switch trial.dropCause {
        case .grant: return dropped + " (every one awaiting a grant: the filesystem's fallocate fell behind)"
        case .late:
            let stolen = trial.cpuStolen.flatMap {
                $0 >= 0.01 ? String(format: "; the hypervisor stole %.0f %% of the CPUs' time", $0 * 100) : nil
            }
            return dropped + " (every one overwritten in the card's queue of \(queueFrames) frames while the recorder's "
                + "thread was behind: it woke up to \(milliseconds(trial.latestWakeUpNs)) late, and its longest append took "
                + "\(milliseconds(trial.appendLatencyNs.max))\(stolen ?? ""); no frame was refused for want of a buffer)"
        case .disk: return dropped + " (every one refused with every buffer in flight: the disk fell behind)"
        case .mixed, nil:
            return dropped + " (\(trial.framesRefused) refused by the writers, \(trial.framesAwaitingGrant) of them awaiting a "
                + "grant; \(trial.framesOverwritten) overwritten in the card's queue)"
        }
    }

    /// One trial of `streams` captures, ended once the device settled past `minimumTrial`,
    /// five seconds after a writer first refused a frame, or at `maximumTrial`; a confirmation
    /// lasts `confirmationTrial` unless a writer refuses. Frames overwritten in the card's queue
    /// do not end a trial: the storage's verdict needs the whole of it.
    static func trial(streams: Int, confirming: Bool, settings: Settings, pool: Pool, directory: String,
                      log: (String) -> Void) throws -> (Trial, ModeRun) {
        let (minimumTrial, maximumTrial) = confirming ? (settings.confirmationTrial, settings.confirmationTrial)
            : (settings.minimumTrial, settings.maximumTrial)
        let frames = max(Int(Double(maximumTrial) / 1e9 * settings.fps), 1)
        let sizes = FrameSizes.constant(bitrate: settings.bitrate, fps: settings.fps, count: frames)
        var plan = RunPlan(streams: streams, bitrate: settings.bitrate, fps: settings.fps, sizes: sizes,
                           inputQueueFrames: settings.inputQueueFrames, scratchDirectory: directory)
        plan.realtimePriority = settings.realtimePriority
        let segmentBytes = settings.segmentBytes, options = settings.captureOptions
        var writers: [SegmentedPoolWriter] = []
        log("trial: \(streams) stream(s), at least \(minimumTrial / 1_000_000_000) s" + (confirming ? " (confirming)" : ""))
        let device = DeviceWrites(path: pool.path)
        // Read on every tick: the last one is the trial's end, its captures' cancels left out.
        let stealBefore = CPUSteal.read()
        var stealLatest = stealBefore
        if device == nil { log("  the pool is on no block device this can read: trials end at --minutes, unchecked for steadiness") }
        let deviceStart = device?.bytes() ?? 0
        var rate = SteadyRate(window: min(10_000_000_000, max(minimumTrial / 2, 1_000_000_000)), minimum: minimumTrial)
        let progress = ModeRunner.Progress()
        // Nanoseconds from here on the monotonic clock (ticks come about once a second, not exactly).
        let started = MonotonicClock.nanoseconds()
        var elapsed: UInt64 = 0, stoppedAt: UInt64?, firstDrop: Int?, firstRefusal: Int?, ended = "longest trial", lastLog = 0
        func failure() -> Error? { writers.lazy.compactMap(\.failure).first }
        let run = try ModeRunner.run(.pool, plan: plan, pool: pool, progress: progress, writers: { index in
            // Each stream's first take is a share of one, so the streams switch takes in turn.
            let writer = try SegmentedPoolWriter(
                pool: pool, destination: "\(directory)/size-\(streams)-\(index)", options: options, segmentBytes: segmentBytes,
                firstSegmentBytes: max(segmentBytes * Int64(index + 1) / Int64(streams), 1),
                leadBytes: settings.bitrate / 8 * 3 / 2)
            writers.append(writer)
            return writer
        }, tick: {
            elapsed = MonotonicClock.nanoseconds() - started
            let second = Int(elapsed / 1_000_000_000)
            if let device, let bytes = device.bytes() { rate.record(time: elapsed, bytes: bytes - deviceStart) }
            let dropped = progress.dropped.load(ordering: .relaxed)
            if dropped > 0 && firstDrop == nil { firstDrop = second }
            if progress.refused.load(ordering: .relaxed) > 0 && firstRefusal == nil { firstRefusal = second }
            if second / 10 > lastLog / 10 {
                lastLog = second
                log("  \(streams) stream(s): \(second) s, \(dropped) dropped"
                    + (rate.lastWindow.map { String(format: ", device %.0f MB/s (all writers)", $0 / 1e6) } ?? ""))
            }
            guard !progress.stopRequested.load(ordering: .relaxed) else { return }
            stealLatest = CPUSteal.read() ?? stealLatest
            if let failure = failure() {
                ended = "a capture failed: \(failure)"
            } else if let firstRefusal, second >= firstRefusal + 5 {
                ended = "refused"
            } else if elapsed >= minimumTrial && (device == nil || rate.steady != nil) {
                ended = "steady"
            } else {
                return
            }
            stoppedAt = elapsed
            progress.stopRequested.store(true, ordering: .relaxed)
        })
        // A failure after the last tick still fails the trial.
        if !ended.hasPrefix("a capture failed"), let failure = failure() { ended = "a capture failed: \(failure)" }
        let append = Percentiles.summary(run.samples.map(\.latency))
        let interval = UInt64((1e9 / settings.fps).rounded())
        // The trial lasts until its stop (or its last frame); the captures' cancels after it do not count.
        let seconds = min(Double(stoppedAt ?? UInt64.max) / 1e9, run.seconds)
        let trial = Trial(streams: streams,
                          passed: run.accounting.dropped == 0 && append.p999 < interval && !ended.hasPrefix("a capture failed"),
                          framesDropped: run.accounting.dropped,
                          framesAwaitingGrant: Int(writers.reduce(0) { $0 + $1.grantRefusals }),
                          framesOverwritten: run.accounting.overwritten, latestWakeUpNs: run.latestWakeUp,
                          latestTurnNs: run.latestTurn,
                          cpuStolen: stealBefore.flatMap { before in stealLatest?.share(since: before) },
                          framesLate: run.accounting.late, firstDropSecond: firstDrop, firstRefusalSecond: firstRefusal,
                          appendLatencyNs: append, frameIntervalNs: interval, seconds: seconds,
                          steady: device == nil || rate.steady != nil, deviceBytesPerSecond: rate.lastWindow,
                          segments: writers.reduce(0) { $0 + $1.segments }, lateSwitches: writers.reduce(0) { $0 + $1.lateSwitches },
                          startsRefused: writers.reduce(0) { $0 + $1.startsRefused },
                          ended: ended,
                          reserveRanOut: (failure() as? ProVideoError).map { [.notEnoughSpace, .storageFull].contains($0.code) } ?? false,
                          confirming: confirming,
                          grants: GrantSummary(writers.reduce(into: GrantTimings()) { $0.merge($1.grantTimings) }))
        log("  \(streams) stream(s): \(trial.passed ? "passed" : "failed"), \(trial.framesDropped) dropped"
            + (trial.framesAwaitingGrant > 0 ? " (\(trial.framesAwaitingGrant) awaiting a grant)" : "")
            + (trial.framesOverwritten > 0 ? " (\(trial.framesOverwritten) overwritten in the card's queue: the recorder "
                + "woke up to \(milliseconds(trial.latestWakeUpNs)) late, its longest append "
                + "\(milliseconds(trial.appendLatencyNs.max)))" : "")
            + (trial.cpuStolen.map { String(format: ", CPU stolen %.1f %%", $0 * 100) } ?? "") + ", append p99.9 "
            + "\(milliseconds(append.p999)) (frame interval \(milliseconds(interval))), \(String(format: "%.0f", trial.seconds)) s, "
            + "\(trial.segments) takes (\(trial.lateSwitches) switches late, \(trial.startsRefused) starts refused for want of "
            + "capacity), ended: \(ended)" + (trial.grants.map { "\n    \($0.line)" } ?? ""))
        return (trial, run)
    }

    /// Lets the filesystem finish the last trial's cancels before the next trial starts: they
    /// give gigabytes back to the reserve, and a trial started at once met that journal work
    /// in its first grants (two streams dropped a frame within a second of starting, right after
    /// a trial of three).
    static func settle() {
        // sync(2): syncfs needs _GNU_SOURCE, which the Swift Glibc module does not define; the
        // neighbour's dirty pages are flushed too, as they would be before the next trial anyway.
        sync()
        Thread.sleep(forTimeInterval: 5)
    }

    package static func milliseconds(_ nanoseconds: UInt64) -> String { String(format: "%.1f ms", Double(nanoseconds) / 1e6) }

    static func minutes(_ seconds: Double) -> String {
        seconds >= 90 ? String(format: "%.1f min", seconds / 60) : String(format: "%.0f s", seconds)
    }
}

@testable import BenchKit
import Foundation
import ProVideoStorage
import TestSupport
import Testing

/// A few frames through each mode into a tiny pool in a scratch directory. Nothing here
/// asserts a timing: the disk is shared and noisy.
@Suite(.serialized) struct BenchSmokeTests {
    static let frames = 6

    /// A scratch pool, held against tests that change kernel settings: the bench's engines
    /// and fio use io_uring, which a sysctl test may be disabling meanwhile.
    static func withPool<T>(_ name: String = #function, _ body: (Pool, String) throws -> T) throws -> T {
        try TestSupport.kernelSettings.reading {
            try TestSupport.withScratch(name) { directory in
                let pool = try Pool.create(at: directory + "/pool", capacity: 32 << 20, measuringBandwidth: false)
                defer { try? pool.destroy() }
                let files = directory + "/files"
                try FileManager.default.createDirectory(atPath: files, withIntermediateDirectories: true)
                return try body(pool, files)
            }
        }
    }

    /// Every mode this machine runs: the mount mode needs /dev/fuse and a FUSE mount (root in CI).
    static let modes = BenchMode.allCases.filter { $0 != .mount || (CaptureMountProcess.isAvailable && TestSupport.isRoot) }

    @Test(arguments: modes)
    func eachModeRecordsEveryFrame(mode: BenchMode) throws {
        try Self.withPool("smoke-\(mode.rawValue)") { pool, files in
            // 1 MB frames: more than one 1 MiB write, so every mode completes writes.
            let sizes = FrameSizes.constant(bitrate: 400_000_000, fps: 50, count: Self.frames)
            let plan = RunPlan(streams: 1, bitrate: 400_000_000, fps: 50, sizes: sizes, inputQueueFrames: 1_000,
                               writeSize: 1 << 20, scratchDirectory: files)
            let remainingBefore = try pool.remainingCapacity
            let run = try ModeRunner.run(mode, plan: plan, pool: pool)
            // Every frame is accounted for, and what was accepted is what was written. A frame
            // the pool refused (overrun policy `fail`: its buffers or its grant behind a disk a
            // neighbour holds up, as the stress mode's writer does) is counted as dropped, never
            // written; with an input queue of 1000 frames nothing else is lost.
            let accepted = run.accounting.onTime + run.accounting.late
            #expect(accepted + run.accounting.dropped == Self.frames && accepted >= 1, "\(run.accounting)")
            #expect(mode == .pool || run.accounting.dropped == 0, "\(run.accounting)")
            #expect(run.bytes == Int64(accepted) * 1_000_000, "\(run.bytes) bytes for \(accepted) frames")
            #expect(run.samples.count == Self.frames)
            #expect(run.completionLatency.max > 0)
            // The capture was cancelled and the files removed: capacity and space come back.
            #expect(try pool.remainingCapacity == remainingBefore)
            #expect(try pool.busyReasons.isEmpty)
            #expect(try FileManager.default.contentsOfDirectory(atPath: files).isEmpty)
        }
    }

    /// Two streams record into one pool at once: every frame is counted, both captures ran
    /// together (the pool saw two), and the pool's capacity comes back whole.
    @Test func twoStreamsShareOnePool() throws {
        try TestSupport.withScratch { directory in
            let pool = try Pool.create(at: "\(directory)/pool", capacity: 16 << 20, measuringBandwidth: false)
            defer { try? pool.destroy() }
            let sizes = FrameSizes.constant(bitrate: 40_000_000, fps: 50, count: 3)
            let plan = RunPlan(streams: 2, bitrate: 40_000_000, fps: 50, sizes: sizes, inputQueueFrames: 1_000,
                               scratchDirectory: directory)
            let run = try ModeRunner.run(.pool, plan: plan, pool: pool)
            #expect(run.accounting.onTime + run.accounting.late == 6)
            #expect(run.bytes == 2 * sizes.total)
            #expect(try pool.remainingCapacity == 16 << 20)
            #expect(try pool.check() == [])
        }
    }

    @Test func plotDrawsOneLinePerMode() {
        let runs = BenchMode.allCases.map { mode in
            ModeRun(mode: mode, engine: "e", accounting: FrameAccounting(interval: 1, inputQueueFrames: 1), bytes: 0,
                    seconds: 1, cpuSeconds: 0,
                    samples: (0..<50).map { ModeRun.Sample(time: UInt64($0) * 20_000_000, latency: UInt64($0 + 1) * 10_000) },
                    completionLatency: LatencySummary(p50: 0, p99: 0, p999: 0, max: 0))
        }
        let svg = LatencyPlot.svg(runs, frameInterval: 20_000_000, title: "a < b")
        #expect(svg.hasPrefix("<svg"))
        #expect(svg.components(separatedBy: "<polyline").count == BenchMode.allCases.count + 1)
        #expect(svg.contains("a &lt; b"))
        #expect(svg.contains(">1 ms<"))
    }

    /// Each dropped frame is a tick in its mode's colour under the plot, counted in the legend,
    /// and a long title (size's answer) wraps within the chart, which grows to hold it (issue 41
    /// item 6: a 900-px plot cut its title off and showed no drop).
    @Test func plotMarksEveryDropAndWrapsItsTitle() {
        var run = ModeRun(mode: .pool, engine: "e", accounting: FrameAccounting(interval: 1, inputQueueFrames: 1), bytes: 0,
                          seconds: 1, cpuSeconds: 0,
                          samples: (0..<50).map { ModeRun.Sample(time: UInt64($0) * 20_000_000, latency: 10_000) },
                          completionLatency: LatencySummary(p50: 0, p99: 0, p999: 0, max: 0))
        run.drops = [500_000_000, 700_000_000, 700_000_000]
        let title = (0..<40).map { "word\($0)" }.joined(separator: " ")
        let short = LatencyPlot.svg([run], frameInterval: 20_000_000, title: "short")
        let long = LatencyPlot.svg([run], frameInterval: 20_000_000, title: title)
        #expect(long.components(separatedBy: "class=\"drop\"").count - 1 == 3)
        #expect(long.contains("pool (e); 3 dropped (ticks below)"))
        let lines = long.components(separatedBy: "<tspan").count - 1
        #expect(lines == LatencyPlot.wrapped(title, width: LatencyPlot.titleLine).count && lines >= 3, "\(lines) title lines")
        #expect(LatencyPlot.wrapped(title, width: LatencyPlot.titleLine).allSatisfy { $0.count <= LatencyPlot.titleLine })
        #expect(LatencyPlot.wrapped(title, width: LatencyPlot.titleLine).joined(separator: " ") == title)
        func height(_ svg: String) -> Double? {
            svg.components(separatedBy: "height=\"").dropFirst().first.flatMap { Double($0.prefix { $0 != "\"" }) }
        }
        #expect((height(long) ?? 0) == (height(short) ?? 0) + 17 * Double(lines - 1))
    }

    /// A run needs no --fps (issue 41: `--mode pool --bitrate 400M --duration 20` was refused
    /// until --fps was added): a codec gives its bitrate and rate, and without one the stated
    /// default, 25, is used and said.
    @Test func theFrameRateComesFromTheCodecOrTheStatedDefault() throws {
        try Self.withPool { pool, _ in
            let byDefault = try TestSupport.run("provideo-bench", [
                "--pool", pool.path, "--bitrate", "40M", "--duration", "0.2", "--mode", "pool", "--json"])
            #expect(byDefault.status == 0 && byDefault.stderr.contains("frames per second: 25 (the default"),
                    "\(byDefault.stderr)")
            let plain = try JSONSerialization.jsonObject(with: Data(byDefault.stdout.utf8)) as? [String: Any]
            #expect(plain?["fps"] as? Double == 25 && plain?["bitrate"] as? Int == 40_000_000, "\(byDefault.stdout)")
            let byCodec = try TestSupport.run("provideo-bench", [
                "--pool", pool.path, "--codec", "prores-proxy-1080p50", "--duration", "0.2", "--mode", "pool", "--json"])
            #expect(byCodec.status == 0 && !byCodec.stderr.contains("the default"), "\(byCodec.stderr)")
            let coded = try JSONSerialization.jsonObject(with: Data(byCodec.stdout.utf8)) as? [String: Any]
            #expect(coded?["fps"] as? Double == 50 && coded?["bitrate"] as? Int == 76_000_000, "\(byCodec.stdout)")
            let unknown = try TestSupport.run("provideo-bench", ["--codec", "prores-9000", "--duration", "1"])
            #expect(unknown.status == 2 && unknown.stderr.contains("unknown codec 'prores-9000'"), "\(unknown.stderr)")
        }
    }

    @Test func commandLinePrintsTheIssuesJSONShape() throws {
        try Self.withPool { pool, _ in
            let result = try TestSupport.run("provideo-bench", [
                "--pool", pool.path, "--bitrate", "40M", "--fps", "50", "--duration", "0.1", "--mode", "all", "--json"])
            #expect(result.status == 0, "\(result.stderr)")
            let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
            let modes = object?["modes"] as? [String: [String: Any]]
            let expected: Set<String> = CaptureMountProcess.isAvailable ? ["pool", "buffered", "direct", "mount"]
                : ["pool", "buffered", "direct"]
            #expect(Set(modes?.keys.map { $0 } ?? []) == expected)
            for (_, entry) in modes ?? [:] {
                for key in ["throughput", "framesOnTime", "framesLate", "framesDropped", "framesRefused", "framesOverwritten",
                            "framesAwaitingGrant", "cpuSecondsPerGB"] {
                    #expect(entry[key] is NSNumber, "\(key)")
                }
                for key in ["appendLatencyNs", "completionLatencyNs"] {
                    #expect(Set((entry[key] as? [String: Any])?.keys.map { $0 } ?? []) == ["p50", "p99", "p999", "max"])
                }
            }
            #expect(try pool.busyReasons.isEmpty)
        }
    }

    /// Run by bare name from `PATH` (as an installed tool is), `--mode all` still finds
    /// `provideo` and runs the mount mode (issue 39, D6: it looked beside `argv[0]`, which then
    /// names no directory, and ran three modes).
    @Test(.enabled(if: CaptureMountProcess.isAvailable && TestSupport.isRoot, "needs /dev/fuse and root"))
    func aBenchRunFromPathRunsTheMountMode() throws {
        try Self.withPool { pool, _ in
            let path = TestSupport.productsDirectory + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
            let result = try TestSupport.run("/usr/bin/env", [
                "provideo-bench", "--pool", pool.path, "--bitrate", "40M", "--fps", "50", "--duration", "0.1",
                "--mode", "all", "--json"], environment: ["PATH": path, "PROVIDEO_BIN": ""])
            #expect(result.status == 0, "\(result.stderr)")
            let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
            let modes = (object?["modes"] as? [String: Any])?.keys.sorted()
            #expect(modes == ["buffered", "direct", "mount", "pool"], "modes run: \(String(describing: modes)); \(result.stderr)")
        }
    }

    @Test func calibrateReportsBandwidth() throws {
        try Self.withPool { pool, _ in
            let fio = FileManager.default.isExecutableFile(atPath: "/usr/bin/fio")
            let result = try TestSupport.run("provideo-bench", [
                "--pool", pool.path, "calibrate", "--size", "8M", "--write-size", "1M", "--queue-depth", "4",
                "--repeat", "3", "--json"] + (fio ? ["--fio"] : []))
            #expect(result.status == 0, "\(result.stderr)")
            let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
            #expect((object?["bandwidth"] as? NSNumber)?.doubleValue ?? 0 > 0)
            #expect((object?["durableBandwidth"] as? NSNumber)?.doubleValue ?? 0 > 0)
            let passes = object?["passes"] as? [[String: Any]] ?? []
            // With fio, 3 becomes 4: each order runs as often as the other.
            #expect(passes.count == (fio ? 4 : 3))
            #expect(passes.map { $0["fioFirst"] as? Bool } == (fio ? [false, true, false, true] : [false, true, false]))
            if fio {
                #expect(result.stderr.contains("4 passes instead of 3"), "\(result.stderr)")
                #expect((object?["fioBandwidth"] as? NSNumber)?.doubleValue ?? 0 > 0)
                #expect((object?["efficiency"] as? NSNumber)?.doubleValue ?? 0 > 0)
                #expect((object?["fioDurableBandwidth"] as? NSNumber)?.doubleValue ?? 0 > 0)
                #expect((object?["durableEfficiency"] as? NSNumber)?.doubleValue ?? 0 > 0)
                let ratios = object?["efficiencyRatios"] as? [String: Any]
                #expect(ratios?["oursFirst"] is NSNumber && ratios?["fioFirst"] is NSNumber, "\(ratios ?? [:])")
                // The durable fio side syncs every N writes, N ≥ 1 from our durable rate.
                #expect(passes.allSatisfy { ($0["fioFdatasync"] as? Int ?? 0) >= 1 }, "\(passes)")
                let arguments = object?["fioArguments"] as? [String] ?? []
                // fio writes the capture's own granted file, captures/<id>/data.
                let file = arguments.first { $0.hasPrefix("--filename=\(pool.path)/captures/") && $0.hasSuffix("/data") }
                #expect(arguments.first == "fio" && file != nil, "\(arguments)")
            }
            // 8 MiB passes end before a commit: the warning says how many bytes --size needs.
            let warning = object?["durableWarning"] as? String ?? ""
            #expect(warning.range(of: #"pass --size [0-9]+ or more \(bytes"#, options: .regularExpression) != nil, "\(warning)")
            #expect(try pool.remainingCapacity == pool.initialCapacity)
        }
    }

    @Test func tooSmallAPoolIsReportedClearly() throws {
        try Self.withPool { pool, _ in
            let result = try TestSupport.run("provideo-bench", [
                "--pool", pool.path, "--bitrate", "4G", "--fps", "25", "--duration", "10", "--mode", "pool"])
            #expect(result.status == 1)
            #expect(result.stderr.contains("reserve left"))
        }
    }

    /// A pool-mode run writes into the reserve, so the free space beside the pool is not asked
    /// to hold its frames again: 120 MB of frames into a 240 MiB pool on a filesystem of 320 MB
    /// (before, it was refused for want of 120 MB and 1 GiB of free space).
    @Test(.enabled(if: TestSupport.isRoot, "needs root: a loop-mounted ext4"))
    func poolModeNeedsNoFreeSpaceBesideThePool() throws {
        try FS.withPool("ext4", capacity: "240M") { fs, pool in
            let free = try #require(try FileManager.default.attributesOfFileSystem(forPath: fs.mountPoint)[.systemFreeSize] as? NSNumber)
            #expect(free.int64Value < 120_000_000, "\(free) bytes free")
            let result = try TestSupport.run("provideo-bench", [
                "--pool", pool, "--bitrate", "48M", "--fps", "25", "--duration", "20", "--mode", "pool", "--json"])
            #expect(result.status == 0, "\(result.stderr)")
            let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
            let run = (object?["modes"] as? [String: Any])?["pool"] as? [String: Any]
            // Every frame the card delivered landed in the pool, none was refused for want of
            // space; a frame the host woke too late for was overwritten in the card's queue (a
            // busy machine's doing, counted apart), never written.
            let bytes = try #require(run?["bytes"] as? Int), overwritten = try #require(run?["framesOverwritten"] as? Int)
            #expect(run?["framesRefused"] as? Int == 0 && overwritten <= 25 && bytes == 120_000_000 - overwritten * 240_000,
                    "\(result.stdout)")
            #expect(run?["framesAwaitingGrant"] as? Int == 0, "\(result.stdout)")
        }
    }

    /// `--noise land` runs its neighbour (a child process of the bench landing a take to
    /// another filesystem): the run reports bytes landed, more than 0 (the child was once not
    /// dispatched, and the run said "0 B of 4.0 GiB landed" and exited 0). The neighbour runs at
    /// idle priority, as `provideo land` does: beside a CPU hog on every core (`.ci/run
    /// --stress`) it may get no CPU in a 2 s run, and the bench then says the run had no landing
    /// noise and fails. Such a run is tried again, up to four more times (2 s each: a longer run
    /// needs more than the test's 32 MiB pool, and the bench refuses it); if the neighbour
    /// still landed nothing while a thread at the same idle priority, measured right after, got
    /// under a quarter of a CPU, the host starved it: a skip saying so, not a pass and not a
    /// failure.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/dev/shm"), "no /dev/shm (tmpfs)"))
    func landingNoiseLandsBytes() throws {
        try Self.withPool { pool, _ in
            try TestSupport.withScratchOnAnotherFilesystem { elsewhere in
                var result = try Self.runLandingNoise(pool.path, to: elsewhere)
                var runs = 1
                while Self.landedNothing(result) && runs < 5 {
                    result = try Self.runLandingNoise(pool.path, to: elsewhere)
                    runs += 1
                }
                if Self.landedNothing(result) {
                    let idle = try Self.idleThreadCPUSeconds(over: 2)
                    if idle < 0.5 {
                        let why = "the landing neighbour landed nothing in \(runs) runs of 2 s, and a thread at "
                            + "idle priority got \(idle) s of CPU in 2 s: the host starves idle work"
                        try Test.cancel("\(why)")
                    }
                }
                #expect(result.status == 0, "\(result.stderr)")
                let line = result.stderr.split(separator: "\n").first { $0.contains("landing neighbour:") && $0.contains("landed") }
                let said = line.map(String.init) ?? ""
                #expect(said.contains("had landed") || (said.contains(" of ") && !said.contains(": 0 B of")),
                        "the neighbour landed nothing: \(result.stderr)")
            }
        }
    }

    /// A 2 s run at 40 Mbit/s beside a 16 MiB landing: what the test's pool holds.
    static func runLandingNoise(_ pool: String, to elsewhere: String) throws -> TestSupport.ProcessResult {
        try TestSupport.run("provideo-bench", [
            "--pool", pool, "--bitrate", "40M", "--fps", "25", "--duration", "2", "--mode", "pool",
            "--noise", "land", "--land-to", elsewhere, "--land-size", "16M"])
    }

    /// The bench's own verdict that its neighbour landed nothing (exit 1, saying so).
    static func landedNothing(_ result: TestSupport.ProcessResult) -> Bool {
        result.status == 1 && result.stderr.contains("the landing neighbour landed nothing during the runs")
    }

    /// CPU seconds a busy thread under `SCHED_IDLE` (the lander's policy) gets in `seconds` of
    /// wall time: about `seconds` on an idle 2-CPU host, almost nothing beside a hog on every core.
    static func idleThreadCPUSeconds(over seconds: Int) throws -> Double {
        let probe = try TestSupport.run("/usr/bin/python3", ["-c", """
            import os, time
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
            start = time.monotonic()
            while time.monotonic() - start < \(seconds): pass
            print(time.process_time())
            """])
        return try #require(Double(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines)), "\(probe.stderr)")
    }

    @Test func usageErrorsExitWithTwo() throws {
        let result = try TestSupport.run("provideo-bench", ["--fps", "25", "--duration", "1", "--mode", "tape"])
        #expect(result.status == 2)
        // The one line that says what was wrong, and where the usage is.
        #expect(result.stderr == "provideo-bench: --mode is pool, buffered, direct, mount or all\nsee `provideo-bench --help`\n")
        let infinite = try TestSupport.run("provideo-bench", ["--fps", "inf", "--duration", "1", "--bitrate", "1M"])
        #expect(infinite.status == 2)
        #expect(infinite.stderr.hasPrefix("provideo-bench: --fps takes a finite number"))
        let bits = try TestSupport.run("provideo-bench", ["--fps", "25", "--duration", "1", "--bitrate", "880"])
        #expect(bits.status == 2 && bits.stderr.hasPrefix("provideo-bench: bitrate '880' is 880 bit/s, below 1 Mbit/s"),
                "\(bits.stderr)")
    }
}

import BenchKit
import CommandLineSupport
import Foundation
import ProVideoStorage

/// The commands: parse their options, run BenchKit, print.
enum BenchCommands {
    static func measure(_ pool: String?, _ arguments: inout Arguments) throws {
        let streams = try integer(&arguments, "--streams", default: 1)
        let codec = try arguments.option("--codec").map { name in
            guard let codec = CodecTable.rate(named: name) else {
                throw UsageError("unknown codec '\(name)'; `provideo codecs` lists them (e.g. prores-422-hq-2160p29.97)")
            }
            return codec
        }
        let fpsOption = try number(&arguments, "--fps")
        let duration = try number(&arguments, "--duration")
        let bitrate = try arguments.option("--bitrate").map(SizeParser.videoBitrate) ?? codec?.bitrate
        let tracePath = try arguments.option("--frame-trace")
        let modeName = try arguments.option("--mode") ?? "all"
        let noise = try arguments.option("--noise") ?? "none"
        let repeats = try integer(&arguments, "--repeat", default: 1)
        let inputQueue = try integer(&arguments, "--input-queue", default: 2)
        let bufferBudget = try arguments.option("--buffer-budget").map { Int(try SizeParser.bytes($0)) }
        let inPlace = arguments.flag("--in-place")
        let realtime = try arguments.option("--realtime").flatMap { try fifoPriority($0, offAllowed: false) }
        let json = arguments.flag("--json")
        let plotPath = try arguments.option("--plot")
        let landTo = try arguments.option("--land-to")
        let landSize = try arguments.option("--land-size").map(SizeParser.bytes) ?? (4 << 30)
        try arguments.finish()

        // The frame rate: --fps, else the codec's, else the stated default (said on standard error).
        let fps = fpsOption ?? codec?.fps ?? Self.defaultFPS
        if fpsOption == nil && codec == nil { log("frames per second: \(Self.defaultFPSText) (the default; --fps or --codec sets it)") }
        guard let duration else { throw UsageError("--duration is required (seconds)") }
        guard fps >= 1, fps <= 1000 else { throw UsageError("--fps must be between 1 and 1000, not \(fps)") }
        guard duration > 0, duration <= 86_400 else { throw UsageError("--duration must be more than 0 and at most 86400 s") }
        for (name, value) in [("--streams", streams), ("--repeat", repeats), ("--input-queue", inputQueue)] where value < 1 {
            throw UsageError("\(name) must be at least 1, not \(value)")
        }
        if let plotPath { try checkWritable(plotPath) }
        guard ["none", "writer", "land"].contains(noise) else { throw UsageError("--noise is none, writer or land") }
        if noise == "land" && landTo == nil {
            throw UsageError("--noise land needs --land-to DIR: a directory on another filesystem (a GlusterFS mount)")
        }
        guard landSize > 0 else { throw UsageError("--land-size must be more than 0") }
        let modes: [BenchMode]
        if modeName == "all" {
            // The mount mode needs FUSE and `provideo`; without them "all" is the other three,
            // and says so.
            modes = CaptureMountProcess.isAvailable ? BenchMode.allCases : BenchMode.allCases.filter { $0 != .mount }
            if !CaptureMountProcess.isAvailable {
                FileHandle.standardError.write(Data(("provideo-bench: no mount mode (needs /dev/fuse and an executable "
                                                     + "\(CaptureMountProcess.binary); set PROVIDEO_BIN to another)\n").utf8))
            }
        } else if let mode = BenchMode(rawValue: modeName) {
            modes = [mode]
        } else {
            throw UsageError("--mode is pool, buffered, direct, mount or all")
        }
        let frames = max(Int((duration * fps).rounded()), 1)
        let sizes: FrameSizes
        if let tracePath {
            sizes = FrameSizes.trace(try FrameSizes.readTrace(tracePath), bitrate: bitrate, fps: fps, count: frames)
        } else if let bitrate {
            sizes = FrameSizes.constant(bitrate: bitrate, fps: fps, count: frames)
        } else {
            throw UsageError("--bitrate (at least 1M, bits per second) or --frame-trace is required")
        }
        let streamBitrate = bitrate ?? Int64((Double(sizes.total) * 8 / duration).rounded())
        var plan = RunPlan(streams: streams, bitrate: streamBitrate, fps: fps, sizes: sizes, inputQueueFrames: inputQueue,
                           scratchDirectory: "", bufferBudget: bufferBudget, inPlace: inPlace)
        plan.realtimePriority = realtime
        if let warning = plan.shortRunWarning { log("warning: " + warning) }
        // Pool and mount modes record every stream into the pool: its frames and the grants its
        // capture holds ahead; the other modes write beside it.
        let poolStreams = Int64(modes.contains(.pool) || modes.contains(.mount) ? streams : 1)
        let workspace = try BenchWorkspace(path: pool, log: log) { capacity in
            poolStreams * RunPlan.poolBytes(perStream: sizes.total, bitrate: streamBitrate, capacity: capacity)
        }
        defer { workspace.release() }
        var settings = Benchmark.Settings(plan: plan, modes: modes, repeats: repeats, noise: noise == "writer",
                                          frameTrace: tracePath)
        if noise == "land" {
            settings.landTo = landTo
            settings.landSize = landSize
        }
        let (report, runs) = try Benchmark.run(settings, workspace: workspace, log: log)
        if let plotPath {
            let firsts = modes.compactMap { mode in runs.first { $0.mode == mode } }
            let title = "Append latency, \(streams) × \(String(format: "%.0f", Double(streamBitrate) / 1e6)) Mbit/s at "
                + "\(fps) fps, noise: \(noise) (first repeat of each mode)"
            let svg = LatencyPlot.svg(firsts, frameInterval: UInt64(1e9 / fps), title: title)
            if (try? svg.write(toFile: plotPath, atomically: true, encoding: .utf8)) != nil {
                log("wrote \(plotPath)")
            } else {
                log("could not write the chart to \(plotPath) (the report follows)")
            }
        }
        if json { try CommandLineProgram.printJSON(report) } else { print(report.table) }
    }


    /// The frame rate when neither `--fps` nor `--codec` gives one: 25, the PAL and 50 Hz
    /// broadcast rate (EBU R 118), the most common rate of the recorders this serves.
    static let defaultFPS = 25.0
    static let defaultFPSText = String(format: "%g", defaultFPS)

    static func size(_ poolPath: String?, _ arguments: inout Arguments) throws {
        let codecName = try arguments.option("--codec")
        let bitrateOption = try arguments.option("--bitrate").map(SizeParser.videoBitrate)
        let fpsOption = try number(&arguments, "--fps")
        let streamsMin = try integer(&arguments, "--streams-min", default: 1)
        let streamsMaxOption = try arguments.option("--streams-max").map { text -> Int in
            guard let value = Int(text) else { throw UsageError("--streams-max takes a whole number, not '\(text)'") }
            return value
        }
        let noise = try arguments.option("--noise") ?? "none"
        let landTo = try arguments.option("--land-to")
        let minutes = try number(&arguments, "--minutes") ?? 0.5
        let confirmMinutes = try number(&arguments, "--confirm-minutes") ?? 5
        let budgetMinutes = try number(&arguments, "--budget-minutes") ?? 15
        let inputQueue = try integer(&arguments, "--input-queue", default: 2)
        let realtimeText = try arguments.option("--realtime")
        let json = arguments.flag("--json")
        let plotPath = try arguments.option("--plot")
        try arguments.finish()
        let realtime: Int32?
        if let realtimeText {
            realtime = try fifoPriority(realtimeText, offAllowed: true)
        } else {
            // A capture application runs its input thread real-time (BENCHMARKS, "--realtime"), so
            // the answer is for such a recorder where the process may; said in the report.
            realtime = RealtimePriority.isPermitted(50) ? 50 : nil
            if realtime == nil { log("recorder threads under the default policy: SCHED_FIFO needs root or RLIMIT_RTPRIO (--realtime)") }
        }

        let bitrate: Int64, fps: Double
        switch (codecName, bitrateOption, fpsOption) {
        case let (name?, nil, nil):
            guard let codec = CodecTable.rate(named: name) else {
                throw UsageError("unknown codec '\(name)'; `provideo codecs` lists them (e.g. prores-422-hq-2160p29.97)")
            }
            (bitrate, fps) = (codec.bitrate, codec.fps)
        case let (nil, rate?, frames):
            if frames == nil { log("frames per second: \(Self.defaultFPSText) (the default; --fps sets it)") }
            (bitrate, fps) = (rate, frames ?? Self.defaultFPS)
        default:
            throw UsageError("size needs --codec NAME, or --bitrate RATE (with --fps FPS, default \(Self.defaultFPSText)), not both")
        }
        guard fps >= 1, fps <= 1000 else { throw UsageError("--fps must be between 1 and 1000, not \(fps)") }
        guard streamsMin >= 1, streamsMin <= 1000 else { throw UsageError("--streams-min must be from 1 to 1000, not \(streamsMin)") }
        if let streamsMaxOption, !(streamsMin...1000).contains(streamsMaxOption) {
            throw UsageError("--streams-max must be from --streams-min (\(streamsMin)) to 1000, not \(streamsMaxOption)")
        }
        guard minutes >= 0.01, minutes <= 60 else { throw UsageError("--minutes must be from 0.01 to 60, not \(minutes)") }
        guard confirmMinutes == 0 || (0.01...60).contains(confirmMinutes) else {
            throw UsageError("--confirm-minutes must be 0 (none) or from 0.01 to 60, not \(confirmMinutes)")
        }
        guard budgetMinutes == 0 || (1...600).contains(budgetMinutes) else {
            throw UsageError("--budget-minutes must be 0 (no limit) or from 1 to 600, not \(budgetMinutes)")
        }
        guard ["none", "writer", "land"].contains(noise) else { throw UsageError("--noise is none, writer or land") }
        if noise == "land" && landTo == nil { throw UsageError("--noise land needs --land-to DIR (another filesystem)") }
        guard (1...1000).contains(inputQueue) else { throw UsageError("--input-queue must be from 1 to 1000 frames, not \(inputQueue)") }
        if let plotPath { try checkWritable(plotPath) }

        let minimum = UInt64(minutes * 60e9)
        var settings = Sizing.Settings(codec: codecName?.lowercased(), bitrate: bitrate, fps: fps,
                                       streams: streamsMin...(streamsMaxOption ?? 1000), minimumTrial: minimum,
                                       maximumTrial: 3 * minimum + 60_000_000_000)
        settings.confirmationTrial = UInt64(confirmMinutes * 60e9)
        // The budget counts from here: creating and measuring the scratch pool is part of the wait.
        settings.deadline = budgetMinutes > 0 ? MonotonicClock.nanoseconds() + UInt64(budgetMinutes * 60e9) : nil
        settings.realtimePriority = realtime
        settings.inputQueueFrames = inputQueue
        // A pool must hold --streams-min; a scratch pool holds the most streams asked for (64 when
        // the bandwidth decides) or what the free space allows. The search stays within what
        // the pool holds.
        let wanted = streamsMaxOption ?? 64
        let noiseBytes: Int64 = noise == "writer" ? 4 << 30 : noise == "land" ? 4 << 30 : 0
        let scratchBytes = settings.scratchPoolBytes(free: try Self.freeBytes("/var/tmp"), noiseBytes: noiseBytes,
                                                     wanted: wanted)
        let workspace = try BenchWorkspace(path: poolPath, scratchBytes: scratchBytes, log: log) { capacity in
            Int64(streamsMin) * settings.poolBytesPerStream(capacity: capacity)
        }
        defer { workspace.release() }
        let pool = workspace.pool
        let (capacity, maxCaptures) = (try pool.initialCapacity, try pool.maxCaptures)
        let perStream = settings.poolBytesPerStream(capacity: capacity)
        let remaining = try pool.remainingCapacity
        // Each stream runs two captures while it switches takes.
        let holds = min(Int(remaining / perStream), maxCaptures.map { $0 / 2 } ?? .max)
        func grownSize(_ streams: Int) -> String {
            "\((Int64(streams) * perStream + capacity - remaining + (1 << 20) - 1) >> 20)M"
        }
        guard holds >= streamsMin else {
            let why = maxCaptures.map { "(it runs at most \($0) captures at once, two a stream) " } ?? ""
            throw BenchError("the pool at \(pool.path) holds \(holds) stream(s) of this rate \(why)(\(ByteFormat.human(perStream)) "
                             + "each: a take of \(settings.segment / 1_000_000_000) s and the grants held ahead); "
                             + (poolPath == nil ? "free space for a larger scratch pool, or name one with --pool"
                                : "grow it to \(grownSize(streamsMin)) (`provideo --pool \(pool.path) resize SIZE`)")
                             + " or lower --streams-min")
        }
        log("measuring the pool's sustained bandwidth (until it settles, at most 120 s)")
        var shown = 0.0
        let bandwidth = try pool.measureBandwidth { seconds, _, rate in
            guard seconds - shown >= 10 else { return }
            shown = seconds
            log(String(format: "  %.0f s: %@ over the last 10 s", seconds, BitRateFormat.human(rate)))
        }
        log("  sustained \(BitRateFormat.human(bandwidth.sustained)) (\(bandwidth.burstText))"
            + (bandwidth.unsettledReason.map { "; not settled: \($0)" } ?? ""))
        let carried = Int(Double(bandwidth.sustained) / Double(bitrate))
        var upper = streamsMaxOption ?? max(2 * carried, streamsMin + 1)
        settings.upperBoundReason = streamsMaxOption.map { "--streams-max \($0)" } ?? "twice what the sustained bandwidth carries"
        if upper > holds {
            log("the pool holds \(holds) stream(s) (\(ByteFormat.human(perStream)) each): trying at most \(holds)"
                + (maxCaptures == nil ? "; grow it to \(grownSize(upper)) to try \(upper)" : ""))
            upper = holds
            settings.upperBoundReason = "the most the pool holds"
        }
        settings.streams = streamsMin...max(upper, streamsMin)
        var neighbour: NoisyNeighbour?
        var lander: LandingNeighbour?
        if noise == "writer" {
            neighbour = try NoisyNeighbour(directory: workspace.directory, limit: noiseBytes)
            log("noisy neighbour writing \(neighbour!.file) through the page cache (fsync every second)")
            Thread.sleep(forTimeInterval: 2)
        } else if let landTo {
            lander = try LandingNeighbour(directory: workspace.directory, landTo: landTo, size: noiseBytes, log: log)
            Thread.sleep(forTimeInterval: 2)
        }
        defer { neighbour?.stop() }
        var landerChecked = false
        defer { if !landerChecked { try? lander?.stop(log: log) } }
        let (report, runs) = try Sizing.run(settings, pool: pool, directory: workspace.directory, bandwidth: bandwidth,
                                            noise: noise, log: log)
        landerChecked = true
        try lander?.stop(log: log)
        // Trials labelled noisy that ran without the noise would mislead: no answer.
        if let early = neighbour?.exitedEarly { throw BenchError(early + "; no answer") }
        if let plotPath {
            // The runs are the answer's trial and the smallest number that failed, in that order.
            var plotted = runs
            let labels = [report.streams > 0 ? report.streams : nil, report.failedAt].compactMap { $0 }.map { "\($0) streams" }
            for index in plotted.indices { plotted[index].mode = index == 0 ? .pool : .buffered }
            let svg = LatencyPlot.svg(plotted, frameInterval: UInt64(1e9 / fps), title: "Append latency: " + report.answer,
                                      legends: labels)
            if (try? svg.write(toFile: plotPath, atomically: true, encoding: .utf8)) != nil { log("wrote \(plotPath)") }
        }
        if json { return try CommandLineProgram.printJSON(report) }
        let header = ["streams", "trial", "storage", "recorder", "dropped", "refused", "cause", "first drop", "queue needed",
                      "append p99.9", "max", "seconds", "device MB/s (all writers)", "ended"]
        let rows = report.trials.map { trial in
            ["\(trial.streams)", trial.confirming ? "confirm" : "search", trial.storagePassed ? "pass" : "FAIL",
             trial.passed ? "pass" : "FAIL", "\(trial.framesDropped)", "\(trial.framesRefused)", trial.dropCause?.rawValue ?? "-",
             trial.firstDropSecond.map { "\($0) s" } ?? "-",
             "\(trial.inputQueueNeeded)",
             Sizing.milliseconds(trial.appendLatencyNs.p999),
             Sizing.milliseconds(trial.appendLatencyNs.max), String(format: "%.0f", trial.seconds),
             trial.deviceBytesPerSecond.map { String(format: "%.0f", $0 / 1e6) } ?? "-", trial.ended]
        }
        let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        for row in [header] + rows {
            print(row.indices.map { row[$0].padding(toLength: widths[$0], withPad: " ", startingAt: 0) }
                .joined(separator: "  ").trimmingCharacters(in: .whitespaces))
        }
        print(report.answer)
        if report.confirmed == false, let lowest = report.trials.last(where: \.confirming)?.streams, lowest > streamsMin {
            print("(no number held at length: search below it with --streams-max \(lowest - 1))")
        }
        if let discard = report.onlineDiscard {
            print("(\(discard.message); Docs/BENCHMARKS.md, \"Online discard costs the recorder\")")
        }
        if let grants = report.grants { print("(grants: \(grants.rawValue))") }
        print(String(format: "(the storage passes a trial when no capture failed and no frame was refused; the recorder "
                     + "when none was dropped and its append p99.9 was under the frame interval, %.1f ms, holding "
                     + "%d frame(s) between its capture card and its writer (--input-queue); recorder threads %@; "
                     + "sustained bandwidth %@, %d stream(s) by arithmetic, not a trial; %.0f s in all)", 1e3 / fps, inputQueue,
                     realtime.map { "SCHED_FIFO \($0)" } ?? "SCHED_OTHER", BitRateFormat.human(bandwidth.sustained),
                     report.estimate, report.seconds))
    }

    /// Free bytes on the filesystem of `path` (a scratch pool's home).
    /// - Throws: `BenchError` when they cannot be read: a scratch pool is not sized on a guess.
    private static func freeBytes(_ path: String) throws -> Int64 {
        guard let free = (try FileManager.default.attributesOfFileSystem(forPath: path)[.systemFreeSize] as? NSNumber)?
            .int64Value else { throw BenchError("the free space under \(path) cannot be read") }
        return free
    }

    static func calibrate(_ poolPath: String?, _ arguments: inout Arguments) throws {
        let fioHugePages = arguments.flag("--fio-hugetlb")
        let withFio = arguments.flag("--fio") || fioHugePages
        let json = arguments.flag("--json")
        let writeSize = Int(try arguments.option("--write-size").map(SizeParser.bytes) ?? (4 << 20))
        let queueDepth = try integer(&arguments, "--queue-depth", default: 16)
        let repeats = try integer(&arguments, "--repeat", default: 5)
        let wanted = try arguments.option("--size").map(SizeParser.bytes)
        // The durable side commits as a recording would; the raw side, like fio, never does.
        let durability = try number(&arguments, "--durability") ?? Double(CaptureOptions().durabilityInterval) / 1e9
        try arguments.finish()
        guard writeSize > 0 else { throw UsageError("--write-size must be more than 0") }
        guard queueDepth >= 4 else { throw UsageError("--queue-depth must be at least 4 (the engine's minimum), not \(queueDepth)") }
        guard repeats >= 1 else { throw UsageError("--repeat must be at least 1, not \(repeats)") }
        guard durability > 0, durability <= 3600 else { throw UsageError("--durability must be more than 0 and at most 3600 s") }
        if let wanted, wanted < Int64(writeSize) {
            throw UsageError("--size must be at least one write (\(ByteFormat.human(Int64(writeSize))))")
        }
        if fioHugePages { try FioRun.checkHugePages(for: writeSize * queueDepth) }
        let bytesWanted = wanted ?? (8 << 30)
        let workspace = try BenchWorkspace(path: poolPath, minimumBytes: Int64(writeSize),
                                           scratchBytes: bytesWanted + (16 << 20), log: log)
        defer { workspace.release() }
        let pool = workspace.pool
        let alignment = pool.directIOAlignment.io
        guard writeSize % alignment == 0 else {
            throw UsageError("--write-size must be a multiple of the pool's direct I/O alignment (\(alignment) bytes)")
        }
        let remaining = try pool.remainingCapacity
        let bytes = min(bytesWanted, remaining) / Int64(writeSize) * Int64(writeSize)
        if remaining < bytesWanted {
            log("the pool's reserve holds \(ByteFormat.human(remaining)): writing \(ByteFormat.human(bytes)) per pass")
        }
        let report = try Calibration.run(
            pool: pool, settings: Calibration.Settings(bytes: bytes, writeSize: writeSize, queueDepth: queueDepth,
                                                       repeats: repeats, withFio: withFio, fioHugePages: fioHugePages,
                                                       durabilityInterval: UInt64(durability * 1e9)),
            destination: workspace.directory + "/calibrate.mov", log: log)
        if json {
            try CommandLineProgram.printJSON(report)
            return
        }
        print("engine \(report.engine), \(ByteFormat.human(report.bytes)) per pass, write size \(ByteFormat.human(Int64(report.writeSize))), "
              + "queue depth \(report.queueDepth), \(report.passes.count) pass\(report.passes.count == 1 ? "" : "es")")
        print(String(format: "bandwidth          %.1f MB/s (median, no durability commit)", report.bandwidth / 1e6))
        if let fio = report.fioBandwidth, let ratios = report.efficiencyRatios {
            print(String(format: "fio bandwidth      %.1f MB/s (median)", fio / 1e6))
            print("efficiency         " + ratioLine(ratios))
        }
        print(String(format: "durable bandwidth  %.1f MB/s = %.0f Mbit/s (median, a commit every %g s)",
                     report.durableBandwidth / 1e6, report.durableBandwidth * 8 / 1e6, report.durabilityInterval))
        if let fio = report.fioDurableBandwidth, let ratios = report.durableEfficiencyRatios {
            print(String(format: "fio durable        %.1f MB/s (median; --fdatasync=N, N writes = one commit interval at our durable rate)", fio / 1e6))
            print("durable efficiency " + ratioLine(ratios))
        }
        if let warning = report.durableWarning {
            print("  \(warning)")
        } else {
            print("  size recordings against the durable bandwidth: it is what a recording, which commits, sustains")
        }
        if report.efficiency != nil {
            print("efficiency is ours / fio over the same bytes: raw (no commits on either) and durable (a data sync each commit interval)")
        }
        if let warning = report.spreadWarning { print("warning: \(warning)") }
    }

    /// "0.962 (geometric mean of 6 paired ratios, 0.801 … 1.120, spread 33%; ours first 0.91, fio first 1.02)".
    private static func ratioLine(_ ratios: Calibration.RatioSummary) -> String {
        String(format: "%.3f (geometric mean of the paired ratios, %.3f … %.3f, spread %.0f%%", ratios.geometricMean,
               ratios.low, ratios.high, ratios.spread * 100)
            + (ratios.oursFirst.map { String(format: "; ours first %.3f", $0) } ?? "")
            + (ratios.fioFirst.map { String(format: ", fio first %.3f", $0) } ?? "") + ")"
    }

    /// The noisy neighbour's child process (started by `NoisyNeighbour`).
    static func noiseWriter(_ arguments: inout Arguments) throws {
        let file = try arguments.positional("the noise file")
        let limit = try SizeParser.bytes(try arguments.positional("the noise file's size limit"))
        try arguments.finish()
        NoiseWriter.run(file: file, limit: limit)
    }

    /// The landing neighbour's child process (started by `LandingNeighbour`).
    static func landNeighbour(_ arguments: inout Arguments) throws {
        let pool = try arguments.positional("the pool")
        try arguments.finish()
        LandingNeighbour.run(pool: pool)
    }

    /// `--realtime`'s value: a `SCHED_FIFO` priority from 1 to 99, or (where `offAllowed`) "off",
    /// which is nil.
    private static func fifoPriority(_ text: String, offAllowed: Bool) throws -> Int32? {
        if offAllowed && text == "off" { return nil }
        guard let priority = Int32(text), (1...99).contains(priority) else {
            throw UsageError("--realtime is a SCHED_FIFO priority from 1 to 99\(offAllowed ? ", or off" : ""), not \(text)")
        }
        return priority
    }

    private static func integer(_ arguments: inout Arguments, _ name: String, default value: Int) throws -> Int {
        guard let text = try arguments.option(name) else { return value }
        guard let number = Int(text) else { throw UsageError("\(name) takes a whole number, not '\(text)'") }
        return number
    }

    private static func number(_ arguments: inout Arguments, _ name: String) throws -> Double? {
        guard let text = try arguments.option(name) else { return nil }
        // "30000/1001" is how NTSC rates are written.
        let parts = text.split(separator: "/").map { Double($0) }
        guard let first = parts.first ?? nil, parts.count <= 2, parts.allSatisfy({ $0 != nil }) else {
            throw UsageError("\(name) takes a number (29.97 or 30000/1001), not '\(text)'")
        }
        let value = parts.count == 2 ? first / parts[1]! : first
        guard value.isFinite else { throw UsageError("\(name) takes a finite number, not '\(text)'") }
        return value
    }

    /// Fails before a long run when `path`'s directory does not exist or cannot be written.
    private static func checkWritable(_ path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        guard FileManager.default.isWritableFile(atPath: directory.isEmpty ? "." : directory) else {
            throw UsageError("cannot write the chart to \(path): \(directory.isEmpty ? "." : directory) is not a writable directory")
        }
    }
}

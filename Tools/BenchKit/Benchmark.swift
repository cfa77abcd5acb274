import Foundation
import ProVideoStorage

/// A measuring run: the modes alternated `repeats` times (the order rotates every repeat so
/// that no mode always runs first or last), optionally next to a noisy neighbour.
package enum Benchmark {
    package struct Settings: Sendable {
        package var plan: RunPlan
        package var modes: [BenchMode]
        package var repeats: Int
        package var noise: Bool
        /// The trace's path, for the report.
        package var frameTrace: String?
        /// With a landing neighbour (`--noise land`): the directory on another filesystem the
        /// take lands in, and its size in bytes.
        package var landTo: String?
        package var landSize: Int64 = 4 << 30

        package init(plan: RunPlan, modes: [BenchMode], repeats: Int, noise: Bool, frameTrace: String?) {
            self.plan = plan
            self.modes = modes
            self.repeats = repeats
            self.noise = noise
            self.frameTrace = frameTrace
        }
    }

    /// Bytes the noisy neighbour's file grows to before it starts over.
    static let noiseFileLimit: Int64 = 4 << 30

    /// Runs every mode and repeat. `plan.scratchDirectory` is replaced by `workspace.directory`.
    /// - Returns: the report and every run, in the order they ran.
    package static func run(_ settings: Settings, workspace: BenchWorkspace,
                           log: @escaping (String) -> Void) throws -> (BenchReport, [ModeRun]) {
        var plan = settings.plan
        plan.scratchDirectory = workspace.directory
        // Buffered and direct modes write files beside the pool; pool and mount modes write
        // into its reserve, which the workspace already holds.
        let fileModes = settings.modes.filter { $0 == .buffered || $0 == .direct }
        let needed = (fileModes.isEmpty ? 0 : plan.sizes.total * Int64(plan.streams))
            + (settings.noise ? noiseFileLimit : 0) + (settings.landTo != nil ? settings.landSize : 0)
        guard needed == 0 || workspace.availableBytes() > needed + (1 << 30) else {
            let what = (fileModes.isEmpty ? [] : ["the \(fileModes.map(\.rawValue).joined(separator: " and ")) mode's files"])
                + (settings.noise ? ["the neighbour's file"] : []) + (settings.landTo != nil ? ["the landing take"] : [])
            throw BenchError("\(workspace.directory) has \(ByteFormat.human(workspace.availableBytes())) free; "
                             + what.joined(separator: ", ") + " need \(ByteFormat.human(needed)) plus 1 GiB to spare")
        }
        let delayAccounting = SchedulerDelayAccounting()
        defer { delayAccounting.restore() }
        if !SchedulerDelayAccounting.isOn {
            log("run-queue delay is not counted: `sysctl kernel.task_delayacct=1` (as root) adds how long slow hand-overs "
                + "waited for a CPU to the report")
        }
        let freePageReporting = FreePageReporting.isOn
        if freePageReporting { log(FreePageReporting.advice) }
        var neighbour: NoisyNeighbour?
        if settings.noise {
            neighbour = try NoisyNeighbour(directory: workspace.directory, limit: noiseFileLimit)
            log("noisy neighbour writing \(neighbour!.file) through the page cache (fsync every second)")
            Thread.sleep(forTimeInterval: 2)
        }
        defer { neighbour?.stop() }
        var lander: LandingNeighbour?
        if let landTo = settings.landTo {
            lander = try LandingNeighbour(directory: workspace.directory, landTo: landTo, size: settings.landSize, log: log)
            Thread.sleep(forTimeInterval: 2)
        }
        // Stopped (and checked) after the runs; on an error before that, stopped quietly.
        var landerChecked = false
        defer { if !landerChecked { try? lander?.stop(log: log) } }
        var runs: [ModeRun] = []
        let seconds = Double(plan.durationNanoseconds) / 1e9
        let total = settings.repeats * settings.modes.count
        for round in 0..<settings.repeats {
            let shift = round % settings.modes.count
            for mode in settings.modes[shift...] + settings.modes[..<shift] {
                let progress = ModeRunner.Progress()
                let label = "\(mode.rawValue) (run \(runs.count + 1)/\(total))"
                log("\(label): \(plan.streams) stream(s) for \(seconds) s")
                let frames = plan.sizes.sizes.count * plan.streams
                var elapsed = 0
                let run = try ModeRunner.run(mode, plan: plan, pool: workspace.pool, progress: progress, tick: {
                    elapsed += 1
                    if seconds >= 5 && elapsed % 5 == 0 {
                        log("  \(label): \(progress.frames.load(ordering: .relaxed))/\(frames) frames, "
                            + "\(progress.dropped.load(ordering: .relaxed)) dropped")
                    }
                })
                try Interruption.check()
                log("  \(label): \(run.accounting.onTime) on time, \(run.accounting.late) late, \(run.accounting.dropped) dropped (\(run.accounting.refused) refused by the writer"
                    + (mode == .pool ? ", \(run.framesAwaitingGrant) of them awaiting a grant), " : "), ")
                    + String(format: "%.1f MB/s", Double(run.bytes) / run.seconds / 1e6))
                runs.append(run)
            }
        }
        landerChecked = true
        try lander?.stop(log: log)
        // Numbers labelled noisy that ran without the noise would mislead: no report.
        if let early = neighbour?.exitedEarly { throw BenchError(early + "; no report") }
        var report = BenchReport(plan: plan, runs: runs, repeatCount: settings.repeats,
                                 noise: settings.landTo != nil ? "land" : settings.noise ? "writer" : "none",
                                 frameTrace: settings.frameTrace)
        report.freePageReporting = freePageReporting
        return (report, runs)
    }
}

import ProVideoStorage

/// Everything a measuring run prints with `--json`: the setup, one entry per mode, and the
/// ratios between modes ("buffered/pool" is buffered's value divided by pool's).
package struct BenchReport: Codable, Sendable {
    package var streams: Int
    /// Total rate of all streams, bits per second.
    package var bitrate: Int64
    package var fps: Double
    /// Seconds of frames per stream and repeat.
    package var duration: Double
    package var repeatCount: Int
    package var noise: String
    package var frameTrace: String?
    package var inputQueueFrames: Int
    /// The pool captures' buffer budget in bytes, nil for the engine's default.
    package var bufferBudget: Int?
    /// Whether pool mode's frames were produced in the capture's buffers (no copy).
    package var inPlace: Bool
    /// The recorder threads' `SCHED_FIFO` priority, nil for the default policy.
    package var realtimePriority: Int32?
    /// Whether the host's free page reporting was on during the run (`FreePageReporting`).
    package var freePageReporting = false
    package var modes: [String: ModeReport]
    package var ratios: [String: ModeRatios]

    /// - Parameter runs: every run, in the order they ran.
    package init(plan: RunPlan, runs: [ModeRun], repeatCount: Int, noise: String, frameTrace: String?) {
        streams = plan.streams
        bitrate = plan.bitrate * Int64(plan.streams)
        fps = plan.fps
        duration = Double(plan.durationNanoseconds) / 1e9
        self.repeatCount = repeatCount
        self.noise = noise
        self.frameTrace = frameTrace
        inputQueueFrames = plan.inputQueueFrames
        bufferBudget = plan.bufferBudget
        inPlace = plan.inPlace
        realtimePriority = plan.realtimePriority
        let ran = BenchMode.allCases.filter { mode in runs.contains { $0.mode == mode } }
        var modes: [String: ModeReport] = [:]
        for mode in ran { modes[mode.rawValue] = ModeReport(runs.filter { $0.mode == mode }) }
        var ratios: [String: ModeRatios] = [:]
        for (i, base) in ran.enumerated() {
            for other in ran.dropFirst(i + 1) {
                ratios["\(other.rawValue)/\(base.rawValue)"] = ModeRatios(modes[other.rawValue]!, over: modes[base.rawValue]!)
            }
        }
        self.modes = modes
        self.ratios = ratios
    }

    /// The report as text tables, for a terminal.
    package var table: String {
        func ms(_ ns: UInt64) -> String { String(format: "%.3f", Double(ns) / 1e6) }
        var lines = ["\(streams) stream(s), \(Double(bitrate) / 1e6) Mbit/s total, \(fps) fps, \(duration) s × \(repeatCount), "
                     + "noise: \(noise), input queue \(inputQueueFrames) frames, pool buffers "
                     + (bufferBudget.map { ByteFormat.human(Int64($0)) } ?? "default") + (inPlace ? ", pool frames in place" : "")
                     + (realtimePriority.map { ", recorder threads SCHED_FIFO \($0)" } ?? "")
                     + (freePageReporting ? ", host free page reporting on" : "")]
        lines.append("mode      MB/s     on time   late  dropped  append p50/p99/p99.9/max ms          completion p99/max ms  CPU s/GB")
        for mode in BenchMode.allCases {
            guard let r = modes[mode.rawValue] else { continue }
            let a = r.appendLatencyNs, c = r.completionLatencyNs
            let append = "\(ms(a.p50)) / \(ms(a.p99)) / \(ms(a.p999)) / \(ms(a.max))"
            let completion = "\(ms(c.p99)) / \(ms(c.max))"
            lines.append(pad(mode.rawValue, 8) + String(format: " %7.1f %9d %6d %8d  ", r.throughput / 1e6, r.framesOnTime,
                                                        r.framesLate, r.framesDropped)
                         + pad(append, 36) + "  " + pad(completion, 21) + String(format: "  %.3f", r.cpuSecondsPerGB))
        }
        for mode in BenchMode.allCases {
            guard let report = modes[mode.rawValue] else { continue }
            lines.append("\(mode.rawValue): latest wake-up after a frame was due \(ms(report.latestWakeUpNs)) ms")
            guard let share = report.slowestAppends else { continue }
            // Through the mount, the writer's "elsewhere" is mostly its wait for the daemon's
            // answer, which only a trace of the daemon splits (Docs/BENCHMARKS.md).
            let daemon = mode == .mount ? "; through the mount, mostly waiting for the daemon's answer, which "
                + "Tools/mount-bench/slow-requests.py splits" : ""
            lines.append("\(mode.rawValue): the slowest 0.1% of hand-overs spent " + String(format: "%.0f%% on a CPU, %.0f%% waiting "
                         + "for one, %.0f%% elsewhere (blocked, interrupts or steal", share.onCPU * 100,
                         share.waitingForCPU * 100, share.elsewhere * 100) + daemon + ")")
        }
        for (name, ratio) in ratios.sorted(by: { $0.key < $1.key }) {
            func f(_ v: Double?) -> String { v.map { String(format: "%.2f", $0) } ?? "-" }
            lines.append("\(name): append p99 ×\(f(ratio.appendP99)), p99.9 ×\(f(ratio.appendP999)), max ×\(f(ratio.appendMax)), "
                         + "throughput ×\(f(ratio.throughput)), CPU/GB ×\(f(ratio.cpuSecondsPerGB))")
        }
        return lines.joined(separator: "\n")
    }

    private func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }
}

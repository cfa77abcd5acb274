import CommandLineSupport
import Foundation
import ProVideoStorage

/// Several captures in one pool: their listing, and the bandwidth they are admitted against.
enum Captures {
    static func maxCaptures(_ text: String) throws -> Int {
        guard let count = Int(text), count >= 1 else {
            throw UsageError("--max-captures takes a number of captures, at least 1, not '\(text)'")
        }
        return count
    }

    /// Measures the pool's durable bandwidth and records it (`create` without --bandwidth,
    /// `measure-bandwidth`), showing progress on standard error; nil when the pool is too
    /// small to measure (one sentence says so on standard error).
    static func measure(_ pool: Pool) throws -> BandwidthMeasurement? {
        let terminal = isatty(STDERR_FILENO) == 1
        var shown = 0.0
        let measurement = try pool.measureAndRecordBandwidth { seconds, bytes, rate in
            guard terminal || seconds - shown >= 10 else { return }
            shown = seconds
            let line = String(format: "measuring the durable bandwidth: %.0f s, %@ written, %@ %@", seconds,
                              ByteFormat.significant(bytes), BitRateFormat.human(rate), seconds < 10 ? "so far" : "over the last 10 s")
            // On a terminal one line redrawn in place; in a log a line every 10 s.
            FileHandle.standardError.write(Data((terminal ? "\r\u{1B}[K" + line : line + "\n").utf8))
        }
        if terminal && shown > 0 { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
        return measurement
    }

    /// What a measurement found, in one sentence.
    static func sentence(_ measurement: BandwidthMeasurement) -> String {
        let admissible = BitRateFormat.human(Int64(checked: Double(measurement.sustained) * CaptureAdmission.admissibleShare) ?? 0)
        let span = measurement.seconds >= 10 ? String(format: "over the last 10 s of %.0f s", measurement.seconds)
            : String(format: "over %.1f s", measurement.seconds)
        let detail = "(\(ByteFormat.significant(measurement.bytes)), a data sync every "
            + String(format: "%g", Double(measurement.commitInterval) / 1e9) + " s; \(measurement.burstText))"
        let verdict = measurement.settled ? "sustained \(span) \(detail);"
            : "\(span) \(detail), but it did not settle: \(measurement.unsettledReason ?? "unknown");"
        return "measured the durable write bandwidth: \(BitRateFormat.human(measurement.sustained)) \(verdict) captures "
            + "may declare \(admissible) together (`provideo set-bandwidth` changes it)"
    }

    static func setBandwidth(_ path: String, _ arguments: inout Arguments) throws {
        let json = arguments.flag("--json")
        let text = try arguments.positional("RATE (e.g. 3.2G) or none")
        try arguments.finish()
        let bandwidth = text == "none" ? nil : try SizeParser.bitrate(text)
        if let bandwidth, bandwidth < 1 { throw UsageError("the bandwidth must be more than 0 bit/s") }
        try Commands.openPool(path).setBandwidth(bandwidth)
        if json { return try CommandLineProgram.printJSON(CommandReports.Bandwidth(path: path, bandwidth: bandwidth)) }
        print(bandwidth.map { "captures are admitted against \(BitRateFormat.human($0)) (80% of it may be declared)" }
              ?? "captures are no longer admitted against a bandwidth")
    }

    static func measureBandwidth(_ path: String, _ arguments: inout Arguments) throws {
        let json = arguments.flag("--json")
        try arguments.finish()
        guard let measurement = try measure(try Commands.openPool(path)) else {
            throw ProVideoError(.notEnoughSpace, "the pool's reserve is smaller than one 4 MiB write: grow it to measure")
        }
        if json { return try CommandLineProgram.printJSON(measurement) }
        print(sentence(measurement))
    }

    /// The admission line of `status`: the bitrates admitted against what the pool takes.
    static func admissionLine(_ status: PoolStatus) -> String {
        let limit = status.maxCaptures.map { "at most \($0) at a time" } ?? "no limit on their number"
        guard let admissible = status.admissibleBitrate, let bandwidth = status.bandwidth else {
            return "captures    \(status.captures.count) running, \(BitRateFormat.human(status.admittedBitrate)) declared "
                + "(no bandwidth set); \(limit)"
        }
        return "captures    \(status.captures.count) running, \(BitRateFormat.human(status.admittedBitrate)) of "
            + "\(BitRateFormat.human(admissible)) admissible (80% of \(BitRateFormat.human(bandwidth))); \(limit)"
    }

    /// One running capture, as `status` and `list` show it. Its destination and engine come
    /// from its journal, a pool member's text: escaped (`TerminalText`).
    static func line(_ capture: PoolStatus.Capture, size: (Int64) -> String) -> String {
        // Figures that could not be read are floors, and say why (never a silent 0).
        let floor = capture.progressUnknown == nil ? "" : "at least "
        return "capture     → \(capture.destination.terminalSafe): \(floor)\(size(capture.bytesWritten)) written, "
            + "\(floor)\(size(capture.committedBytes)) committed, \(BitRateFormat.human(capture.bitrate)), "
            + "\(capture.engine.terminalSafe) (pid \(capture.pid))"
            + (capture.counters.map { ", \($0.buffersInFlight) buffer(s) in flight, \($0.overruns) overrun(s)" } ?? "")
            + (capture.admittedOverBandwidth ? " [started over the admissible bandwidth with --force]" : "")
            + (capture.progressUnknown.map { " [progress unknown: \($0.terminalSafe)]" } ?? "")
    }
}

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

    /// Measures the new pool's durable bandwidth and records it (`create` without
    /// --bandwidth); returns the sentence that says so.
    static func measure(_ pool: Pool) throws -> String {
        do {
            let bandwidth = try pool.measureBandwidth()
            try pool.setBandwidth(bandwidth)
            return "measured a durable write bandwidth of \(BitRateFormat.human(bandwidth)): captures may declare "
                + "\(BitRateFormat.human(Int64(Double(bandwidth) * Pool.admissibleShare))) together "
                + "(`provideo set-bandwidth` changes it)"
        } catch let error as ProVideoError where error.code == .notEnoughSpace {
            return "the pool is too small to measure its bandwidth: captures are not admitted against one "
                + "(`provideo set-bandwidth RATE` sets it)"
        }
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
        try arguments.finish()
        print(try measure(try Commands.openPool(path)))
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

    /// One running capture, as `status` and `list` show it.
    static func line(_ capture: PoolStatus.Capture, size: (Int64) -> String) -> String {
        "capture     → \(capture.destination): \(size(capture.bytesWritten)) written, "
            + "\(size(capture.committedBytes)) committed, \(BitRateFormat.human(capture.bitrate)), "
            + "\(capture.engine) (pid \(capture.pid))"
            + (capture.counters.map { ", \($0.buffersInFlight) buffer(s) in flight, \($0.overruns) overrun(s)" } ?? "")
            + (capture.admittedOverBandwidth ? " [started over the admissible bandwidth with --force]" : "")
    }
}

import Foundation
import ProVideoStorage

/// The human view of a pool's status, for `status` and each redraw of `status --watch`.
struct StatusView {
    var status: PoolStatus
    /// The recording time is shown at this rate (`--bitrate`, `--codec`).
    var rate: RecordingRate?
    /// Byte counts beside the rounded sizes (`--bytes`).
    var exactBytes: Bool
    /// Each capture's write rate in bytes per second, by capture id, measured between two
    /// redraws.
    var captureRates: [String: Double] = [:]

    func size(_ bytes: Int64) -> String {
        ByteFormat.significant(bytes) + (exactBytes ? " (\(bytes) bytes)" : "")
    }

    var lines: [String] {
        let device = status.device
        let atCapture = status.recordingSecondsRemaining.map {
            " (\(TimeFormat.clock($0)) at the running captures' \(BitRateFormat.human(status.admittedBitrate)))"
        } ?? ""
        var lines = [
            // The filesystem's and device's names are pool.json's, which any member may write.
            "pool        \(status.path.terminalSafe) (\(status.filesystem.terminalSafe)\(device.path.map { " on \($0.terminalSafe)" } ?? "")"
                + (status.readOnly == true ? ", read-only: it can be read, not changed" : "") + ")",
            "capacity    \(size(status.initialCapacity))",
            "remaining   \(status.remainingCapacityIsAtLeast == nil ? "" : "at least ")\(size(status.remainingCapacity))\(atCapture)",
        ]
        // A capture whose progress cannot be read: the figure is a floor, and why.
        for reason in status.remainingCapacityIsAtLeast ?? [] {
            lines.append("            (a capture's written bytes are unknown: \(reason.terminalSafe))")
        }
        if let rate { lines.append("time left   \(rate.describe(remaining: status.remainingCapacity))") }
        lines += [
            "on disk     \(size(status.reservedBytesOnDisk)) allocated",
            "busy        \(status.busyReasons.isEmpty ? "no" : status.busyReasons.description)",
            "direct I/O  aligned to \(status.directIOAlignment.offset) B (offset), \(status.directIOAlignment.memory) B (memory)",
            "device      sectors \(device.logicalSectorSize) B logical, \(device.physicalSectorSize) B physical; "
                + "optimal I/O \(device.optimalIOSize) B",
        ] + SchedulerLines.status(status) + [
            "engine      \(status.engine.terminalSafe)",
        ]
        if let grants = status.grants {
            lines.append("grants      \(grants.rawValue)" + (status.grantsNote.map { " (\($0.terminalSafe))" } ?? ""))
        }
        if let discard = status.onlineDiscard { lines.append("discard     \(discard.message.terminalSafe)") }
        lines.append(Captures.admissionLine(status))
        for capture in status.captures {
            var line = Captures.line(capture, size: size)
            if let rate = captureRates[capture.id] { line += String(format: ", %.1f MB/s", rate / 1e6) }
            lines.append(line)
        }
        return lines + LandingLines.status(status)
    }
}

/// `status --json`: the library's status, with the recording time asked for by `--bitrate`
/// or `--codec` under "recordingTime".
struct StatusReport: Encodable {
    var status: PoolStatus
    var rate: RecordingRate?

    struct Time: Encodable {
        var bitrate: Int64
        var codec: String?
        /// Seconds; null when the bitrate is 0 (unknown).
        var seconds: Double?

        enum Key: String, CodingKey { case bitrate, codec, seconds }

        /// Writes `seconds` as null rather than leaving it out, so a script reads "unknown".
        func encode(to encoder: Encoder) throws {
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(bitrate, forKey: .bitrate)
            try container.encodeIfPresent(codec, forKey: .codec)
            try container.encode(seconds, forKey: .seconds)
        }
    }

    enum Key: String, CodingKey { case recordingTime }

    func encode(to encoder: Encoder) throws {
        try status.encode(to: encoder)
        guard let rate else { return }
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(Time(bitrate: rate.bitrate, codec: rate.codec,
                                  seconds: status.remainingDuration(atBitrate: rate.bitrate)), forKey: .recordingTime)
    }
}

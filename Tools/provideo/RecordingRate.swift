import CommandLineSupport
import Foundation
import ProVideoStorage

/// The bitrate `status --bitrate RATE` or `status --codec NAME` asks the recording time for.
struct RecordingRate: Encodable {
    /// Bits per second; 0 means unknown.
    var bitrate: Int64
    /// The codec table's name when `--codec` gave it.
    var codec: String?

    /// Reads `--bitrate` and `--codec` (at most one); nil when neither is given.
    static func read(_ arguments: inout Arguments) throws -> RecordingRate? {
        let rate = try arguments.option("--bitrate")
        let codec = try arguments.option("--codec")
        switch (rate, codec) {
        case (nil, nil): return nil
        case (_?, _?): throw UsageError("give --bitrate or --codec, not both")
        case (let rate?, nil):
            let bits = try SizeParser.bitrate(rate)
            return RecordingRate(bitrate: bits == 0 ? 0 : try SizeParser.videoBitrate(rate))
        case (nil, let name?):
            guard let entry = CodecTable.rate(named: name) else {
                throw UsageError("unknown codec '\(name)'; `provideo codecs` lists them (e.g. prores-422-hq-2160p29.97, dnxhr-hq-1080p25)")
            }
            return RecordingRate(bitrate: entry.bitrate, codec: entry.name)
        }
    }

    /// "1:02:05 at 880 Mbit/s (prores-422-hq-2160p29.97)", or "unknown" for a bitrate of 0.
    func describe(remaining: Int64) -> String {
        guard let seconds = RecordingTime.seconds(bytes: remaining, atBitrate: bitrate) else {
            return "unknown (no bitrate)"
        }
        return "\(TimeFormat.clock(seconds)) at \(TimeFormat.bitrate(bitrate))" + (codec.map { " (\($0))" } ?? "")
    }
}


/// The data rates of the formats recorder users quote, so "how long can I record" and "how many
/// streams fit" can be asked by codec name (`provideo status --codec prores-422-hq-2160p29.97`).
/// Rates are the codecs' published targets; a real stream varies around them (ProRes is
/// variable bitrate).
package struct CodecRate: Codable, Sendable, Equatable {
    /// Lower case, e.g. "prores-422-hq-2160p29.97", "dnxhr-hq-1080p25".
    package var name: String
    /// Bits per second.
    package var bitrate: Int64
    /// Frames per second, exact for the 1000/1001 rates only as a rational: see `frameRate`.
    package var fps: Double
    /// The frame rate as the video standard writes it: 30000/1001 for "29.97".
    package var frameRate: FrameRate
}

/// A frame rate as a fraction (SMPTE ST 12-1: the NTSC-derived rates are N×1000/1001).
package struct FrameRate: Codable, Sendable, Equatable {
    package var numerator: Int64
    package var denominator: Int64
    /// How a codec name writes it: "24", "23.976", "29.97", "59.94".
    package var label: String
}

package enum CodecTable {
    /// Every format, ProRes then DNxHR, each at 1080p and 2160p (UHD, 3840×2160) and at every
    /// frame rate of `frameRates`.
    package static let all: [CodecRate] = proRes + dnxhr

    /// The rate of the format named `name` (case-insensitive), nil when unknown. The names of
    /// the first table, which had integer rates only, still work and mean exactly those rates;
    /// "23.98" is taken for "23.976".
    package static func rate(named name: String) -> CodecRate? {
        var wanted = name.lowercased()
        if wanted.hasSuffix("p23.98") { wanted = String(wanted.dropLast(2)) + "976" }
        return all.first { $0.name == wanted }
    }

    /// The rates recorders offer (the ProRes white paper's table columns): each integer rate
    /// of 24, 30 and 60 beside its 1000/1001 rate.
    static let frameRates: [FrameRate] = [
        FrameRate(numerator: 24_000, denominator: 1001, label: "23.976"), FrameRate(numerator: 24, denominator: 1, label: "24"),
        FrameRate(numerator: 25, denominator: 1, label: "25"),
        FrameRate(numerator: 30_000, denominator: 1001, label: "29.97"), FrameRate(numerator: 30, denominator: 1, label: "30"),
        FrameRate(numerator: 50, denominator: 1, label: "50"),
        FrameRate(numerator: 60_000, denominator: 1001, label: "59.94"), FrameRate(numerator: 60, denominator: 1, label: "60"),
    ]

    /// Apple ProRes target data rates in Mbit/s, from Apple's "Apple ProRes White Paper"
    /// (April 2022), Appendix "Target Data Rates": 1920×1080 and 3840×2160 tables, columns
    /// 24, 25, 30, 50 and 60 fps. ProRes targets a size per frame, so a 1000/1001 rate is its
    /// integer rate's figure × 1000/1001 (the white paper's 23.976, 29.97 and 59.94 columns
    /// are these figures rounded to whole Mbit/s: 884 for 422 HQ 2160p29.97).
    static let proResMegabits: [(profile: String, p1080: [Int64], p2160: [Int64])] = [
        ("proxy", [36, 38, 45, 76, 91], [145, 151, 182, 303, 363]),
        ("lt", [82, 85, 102, 170, 204], [328, 342, 410, 684, 821]),
        ("422", [118, 122, 147, 245, 294], [471, 492, 590, 983, 1179]),
        ("422-hq", [176, 184, 221, 367, 441], [707, 737, 885, 1475, 1769]),
        ("4444", [264, 275, 330, 551, 661], [1062, 1106, 1327, 2212, 2654]),
        ("4444-xq", [396, 413, 496, 826, 992], [1593, 1659, 1991, 3318, 3981]),
    ]

    /// Avid DNxHR bytes per frame, from Avid's "DNxHR Codec Bandwidth Specifications"
    /// (bytes per frame for 1920×1080 and 3840×2160); the bitrate is bytes × 8 × frame rate.
    /// HQ and HQX share a frame size (HQX spends it on 12 bits). Each size is the codec's own
    /// rule for a resolution-independent frame (SMPTE ST 2019-1 as FFmpeg's
    /// `avpriv_dnxhd_get_hr_frame_size` computes it: macroblocks × the profile's packet
    /// scale, rounded to 4096 bytes), which `CodecTableTests` checks.
    static let dnxhrFrameBytes: [(profile: String, p1080: Int64, p2160: Int64)] = [
        ("lb", 188_416, 749_568),
        ("sq", 606_208, 2_408_448),
        ("hq", 917_504, 3_641_344),
        ("hqx", 917_504, 3_641_344),
        ("444", 1_835_008, 7_286_784),
    ]

    /// The white paper's column for each of `frameRates`: a 1000/1001 rate uses its integer
    /// rate's column.
    private static let proResColumn = ["23.976": 0, "24": 0, "25": 1, "29.97": 2, "30": 2, "50": 3, "59.94": 4, "60": 4]

    static let proRes: [CodecRate] = proResMegabits.flatMap { row in
        frameRates.flatMap { rate in
            let column = proResColumn[rate.label]!
            return [(1080, row.p1080[column]), (2160, row.p2160[column])].map { lines, megabits in
                // × 1000/1001 for the NTSC rates; exact for the others.
                codec("prores-\(row.profile)-\(lines)p", rate, bitrate: megabits * 1_000_000 * (rate.denominator == 1 ? 1 : 1000) / rate.denominator)
            }
        }
    }

    static let dnxhr: [CodecRate] = dnxhrFrameBytes.flatMap { row in
        frameRates.flatMap { rate in
            [(1080, row.p1080), (2160, row.p2160)].map { lines, bytes in
                codec("dnxhr-\(row.profile)-\(lines)p", rate, bitrate: bytes * 8 * rate.numerator / rate.denominator)
            }
        }
    }

    private static func codec(_ prefix: String, _ rate: FrameRate, bitrate: Int64) -> CodecRate {
        CodecRate(name: prefix + rate.label, bitrate: bitrate, fps: Double(rate.numerator) / Double(rate.denominator),
                  frameRate: rate)
    }
}

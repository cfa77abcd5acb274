/// The data rates of the formats recorder users quote, so "how long can I record" can be asked
/// by codec name (`provideo status --codec prores-422-hq-2160p30`). Rates are the codecs'
/// published targets; a real stream varies around them (ProRes is variable bitrate).
package struct CodecRate: Codable, Sendable, Equatable {
    /// Lower case, e.g. "prores-422-hq-2160p30", "dnxhr-hq-1080p25".
    package var name: String
    /// Bits per second.
    package var bitrate: Int64
}

package enum CodecTable {
    /// Every format, ProRes then DNxHR, each at 1080p and 2160p (UHD, 3840×2160) and at 24,
    /// 25, 30, 50 and 60 frames per second.
    package static let all: [CodecRate] = proRes + dnxhr

    /// The rate of the format named `name` (case-insensitive), nil when unknown.
    package static func rate(named name: String) -> CodecRate? {
        let wanted = name.lowercased()
        return all.first { $0.name == wanted }
    }

    static let frameRates = [24, 25, 30, 50, 60]

    /// Apple ProRes target data rates in Mbit/s, from Apple's "Apple ProRes White Paper"
    /// (April 2022), Appendix "Target Data Rates": 1920×1080 and 3840×2160 tables, columns
    /// 24, 25, 30, 50 and 60 fps.
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
    /// HQ and HQX share a frame size (HQX spends it on 12 bits).
    static let dnxhrFrameBytes: [(profile: String, p1080: Int64, p2160: Int64)] = [
        ("lb", 188_416, 749_568),
        ("sq", 606_208, 2_408_448),
        ("hq", 917_504, 3_641_344),
        ("hqx", 917_504, 3_641_344),
        ("444", 1_835_008, 7_286_784),
    ]

    static let proRes: [CodecRate] = proResMegabits.flatMap { row in
        frameRates.indices.flatMap { index in
            [CodecRate(name: "prores-\(row.profile)-1080p\(frameRates[index])", bitrate: row.p1080[index] * 1_000_000),
             CodecRate(name: "prores-\(row.profile)-2160p\(frameRates[index])", bitrate: row.p2160[index] * 1_000_000)]
        }
    }

    static let dnxhr: [CodecRate] = dnxhrFrameBytes.flatMap { row in
        frameRates.flatMap { fps in
            [CodecRate(name: "dnxhr-\(row.profile)-1080p\(fps)", bitrate: row.p1080 * 8 * Int64(fps)),
             CodecRate(name: "dnxhr-\(row.profile)-2160p\(fps)", bitrate: row.p2160 * 8 * Int64(fps))]
        }
    }
}

@testable import CommandLineSupport
import Testing

/// The codec table the tools size streams from (`provideo codecs`, `--codec`): ProRes from
/// Apple's ProRes white paper, DNxHR from Avid's specifications, checked against the codec's
/// frame-size rule.
struct CodecTableTests {
    /// Spot values from the sources cited beside the table, and every name unique.
    @Test(arguments: [("prores-422-hq-2160p30", Int64(885_000_000)), ("prores-4444-xq-2160p60", 3_981_000_000),
                      ("prores-proxy-1080p24", 36_000_000), ("prores-lt-1080p50", 170_000_000),
                      ("dnxhr-444-2160p60", 3_497_656_320), ("dnxhr-hq-1080p30", 220_200_960),
                      ("DNxHR-LB-2160p25", 149_913_600), ("prores-422-hq-2160p29.97", 884_115_884),
                      ("prores-422-hq-1080p23.976", 175_824_175), ("dnxhr-hq-1080p29.97", 219_980_979),
                      ("prores-422-hq-2160p23.98", 706_293_706)])
    func codecRates(_ name: String, _ bitrate: Int64) {
        #expect(CodecTable.rate(named: name)?.bitrate == bitrate)
    }

    @Test func codecTableCoversEveryProfileOnce() {
        #expect(CodecTable.all.count == (6 + 5) * 2 * 8)
        #expect(Set(CodecTable.all.map(\.name)).count == CodecTable.all.count)
        #expect(CodecTable.rate(named: "prores-9999") == nil)
        #expect(CodecTable.rate(named: "prores-422-hq-2160p29.97")?.frameRate == FrameRate(numerator: 30_000, denominator: 1001, label: "29.97"))
        #expect(CodecTable.rate(named: "prores-422-hq-2160p30")?.fps == 30)
    }

    /// Each DNxHR frame size is the codec's rule for a resolution-independent frame: macroblocks
    /// (16×16, rounded up) × the profile's packet scale / 255, rounded to 4096 bytes (FFmpeg's
    /// `avpriv_dnxhd_get_hr_frame_size`; the scales of SMPTE ST 2019-1's DNxHR profiles).
    @Test func dnxhrFrameSizesFollowTheCodecsRule() {
        let packetScale: [String: Int64] = ["lb": 5888, "sq": 18944, "hq": 28672, "hqx": 28672, "444": 57344]
        func frameBytes(_ profile: String, width: Int64, height: Int64) -> Int64 {
            let bytes = (height + 15) / 16 * ((width + 15) / 16) * packetScale[profile]! / 255
            return max((bytes + 2048) / 4096 * 4096, 8192)
        }
        for (profile, scale) in packetScale {
            #expect(scale > 0)
            #expect(CodecTable.rate(named: "dnxhr-\(profile)-1080p25")?.bitrate == frameBytes(profile, width: 1920, height: 1080) * 8 * 25)
            #expect(CodecTable.rate(named: "dnxhr-\(profile)-2160p25")?.bitrate == frameBytes(profile, width: 3840, height: 2160) * 8 * 25)
        }
    }
}

import CommandLineSupport
import TestSupport
import Testing

@Suite struct SizeParserTests {
    @Test(arguments: [
        ("4096", Int64(4096)), ("64K", 65_536), ("64KiB", 65_536), ("1M", 1_048_576), ("64G", 68_719_476_736),
        ("64gib", 68_719_476_736), ("2T", 2_199_023_255_552), ("10GB", 10_000_000_000), ("5MB", 5_000_000),
        ("0", 0), ("8191P".isEmpty ? "1" : "1B", 1),
    ])
    func parsesSizes(text: String, bytes: Int64) throws {
        #expect(try SizeParser.bytes(text) == bytes)
    }

    @Test(arguments: ["12x", "-1", "", "1.5G", "G", "9223372036854775808", "8388608T", "99999999999999999999"])
    func rejectsBadSizes(text: String) {
        #expect(throws: UsageError.self) { try SizeParser.bytes(text) }
    }

    @Test func largestSizeFits() throws {
        #expect(try SizeParser.bytes("9223372036854775807") == Int64.max)
        #expect(try SizeParser.bytes("8388607T") == 8_388_607 << 40)
    }

    @Test(arguments: [("880M", Int64(880_000_000)), ("4G", 4_000_000_000), ("45Mbps", 45_000_000), ("1000", 1000),
                      ("3500Mbit/s", 3_500_000_000)])
    func parsesBitrates(text: String, bits: Int64) throws {
        #expect(try SizeParser.bitrate(text) == bits)
    }

    @Test func rejectsBadBitrate() {
        #expect(throws: UsageError.self) { try SizeParser.bitrate("fast") }
        #expect(throws: UsageError.self) { try SizeParser.bitrate("880MiB") }
    }
}

import CommandLineSupport
import TestSupport
import Testing

@Suite struct SizeParserTests {
    @Test(arguments: [
        ("4096", Int64(4096)), ("64K", 65_536), ("64KiB", 65_536), ("1M", 1_048_576), ("64G", 68_719_476_736),
        ("64gib", 68_719_476_736), ("2T", 2_199_023_255_552), ("10GB", 10_000_000_000), ("5MB", 5_000_000),
        ("0", 0), ("8191P".isEmpty ? "1" : "1B", 1), ("1.5G", 1_610_612_736), ("0.5K", 512), ("2.25TB", 2_250_000_000_000),
        ("1.0", 1), ("0.1K", 102), ("0.000001T", 1_099_512),
    ])
    func parsesSizes(text: String, bytes: Int64) throws {
        #expect(try SizeParser.bytes(text) == bytes)
    }

    @Test(arguments: ["12x", "-1", "", "1.5", "0.5B", ".5G", "1.G5", "1.1234567G", "G", "9223372036854775808", "8388608T", "99999999999999999999"])
    func rejectsBadSizes(text: String) {
        #expect(throws: UsageError.self) { try SizeParser.bytes(text) }
    }

    @Test func largestSizeFits() throws {
        #expect(try SizeParser.bytes("9223372036854775807") == Int64.max)
        #expect(try SizeParser.bytes("8388607T") == 8_388_607 << 40)
    }

    @Test(arguments: [("880M", Int64(880_000_000)), ("4G", 4_000_000_000), ("45Mbps", 45_000_000), ("1000", 1000),
                      ("3500Mbit/s", 3_500_000_000), ("1.5G", 1_500_000_000), ("0.5M", 500_000)])
    func parsesBitrates(text: String, bits: Int64) throws {
        #expect(try SizeParser.bitrate(text) == bits)
    }

    /// A bitrate typed without its M is refused, and the message says what to type.
    @Test func videoBitrateBelowOneMegabitIsRefused() throws {
        #expect(try SizeParser.videoBitrate("1M") == 1_000_000)
        let error = #expect(throws: UsageError.self) { try SizeParser.videoBitrate("880") }
        #expect(error?.description == "bitrate '880' is 880 bit/s, below 1 Mbit/s; video rates are quoted in Mbit/s: "
                + "write e.g. 880M for 880 Mbit/s")
    }

    /// Too large is said in the unit that was parsed: bits for a bitrate.
    @Test func tooLargeSpeaksTheUnit() {
        let bitrate = #expect(throws: UsageError.self) { try SizeParser.bitrate("99999999999T") }
        #expect(bitrate?.description == "invalid bitrate '99999999999T': too large (the limit is 9223372036854775807 bit/s)")
        let size = #expect(throws: UsageError.self) { try SizeParser.bytes("9999999T") }
        #expect(size?.description == "invalid size '9999999T': too large (the limit is 9223372036854775807 bytes)")
    }

    /// An unknown unit is quoted as it was typed (1e9 is not read as a unit "E9").
    @Test func unknownUnitIsQuotedAsTyped() {
        let error = #expect(throws: UsageError.self) { try SizeParser.bytes("1e9") }
        #expect(error?.description.hasPrefix("invalid size '1e9': unknown unit 'e9'; use e.g.") == true, "\(String(describing: error))")
    }

    @Test func rejectsBadBitrate() {
        #expect(throws: UsageError.self) { try SizeParser.bitrate("fast") }
        #expect(throws: UsageError.self) { try SizeParser.bitrate("880MiB") }
    }
}

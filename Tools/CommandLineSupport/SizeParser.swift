/// Parses sizes and bitrates as people type them.
public enum SizeParser {
    /// A byte count: plain bytes ("4096"), K/M/G/T with an optional "iB" (powers of 1024:
    /// "64G", "64GiB"), or KB/MB/GB/TB (powers of 1000: "64GB"). Case-insensitive.
    /// - Throws: `UsageError` for empty input, a negative or fractional number, an unknown
    ///   suffix, or a value that does not fit in 63 bits.
    public static func bytes(_ text: String) throws -> Int64 {
        let binary: [String: Int64] = ["": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40,
                                        "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40,
                                        "KB": 1_000, "MB": 1_000_000, "GB": 1_000_000_000, "TB": 1_000_000_000_000]
        return try parse(text, units: binary, what: "size", example: "64G, 512MiB, 10GB or 4096")
    }

    /// A rate in bits per second with SI suffixes, as codecs are quoted: "880M" is
    /// 880,000,000 bit/s, "4G" is 4,000,000,000. "bps" / "bit/s" may follow.
    public static func bitrate(_ text: String) throws -> Int64 {
        var trimmed = text.uppercased()
        for suffix in ["BIT/S", "BPS"] where trimmed.hasSuffix(suffix) { trimmed.removeLast(suffix.count) }
        let si: [String: Int64] = ["": 1, "K": 1_000, "M": 1_000_000, "G": 1_000_000_000, "T": 1_000_000_000_000]
        return try parse(trimmed, units: si, what: "bitrate", example: "880M or 4G (bits per second)", original: text)
    }

    private static func parse(_ text: String, units: [String: Int64], what: String, example: String,
                              original: String? = nil) throws -> Int64 {
        let shown = original ?? text
        let digits = text.prefix { $0.isASCII && $0.isNumber }
        let suffix = text.dropFirst(digits.count).uppercased()
        guard !digits.isEmpty else {
            throw UsageError("invalid \(what) '\(shown)': expected a whole number with an optional unit, e.g. \(example)")
        }
        guard let unit = units[suffix] else {
            throw UsageError("invalid \(what) '\(shown)': unknown unit '\(suffix)'; use e.g. \(example)")
        }
        guard let value = Int64(digits) else {
            throw UsageError("invalid \(what) '\(shown)': too large (the limit is \(Int64.max) bytes)")
        }
        let (product, overflow) = value.multipliedReportingOverflow(by: unit)
        guard !overflow else { throw UsageError("invalid \(what) '\(shown)': too large (the limit is \(Int64.max))") }
        return product
    }
}

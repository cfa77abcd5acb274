/// Parses sizes and bitrates as people type them.
public enum SizeParser {
    /// A byte count: plain bytes ("4096"), K/M/G/T with an optional "iB" (powers of 1024:
    /// "64G", "64GiB"), or KB/MB/GB/TB (powers of 1000: "64GB"). A unit may follow a decimal
    /// number ("1.5G", up to 6 decimals), rounded to the nearest byte. Case-insensitive.
    /// - Throws: `UsageError` for empty input, a negative number, a fraction of a byte, an
    ///   unknown suffix, or a value that does not fit in 63 bits.
    public static func bytes(_ text: String) throws -> Int64 {
        let binary: [String: Int64] = ["": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40,
                                        "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40,
                                        "KB": 1_000, "MB": 1_000_000, "GB": 1_000_000_000, "TB": 1_000_000_000_000]
        return try parse(text, units: binary, what: "size", unitName: "bytes", example: "64G, 1.5T, 512MiB, 10GB or 4096")
    }

    /// A rate in bits per second with SI suffixes, as codecs are quoted: "880M" is
    /// 880,000,000 bit/s, "1.5G" is 1,500,000,000. "bps" / "bit/s" may follow.
    public static func bitrate(_ text: String) throws -> Int64 {
        var trimmed = text.uppercased()
        for suffix in ["BIT/S", "BPS"] where trimmed.hasSuffix(suffix) { trimmed.removeLast(suffix.count) }
        let si: [String: Int64] = ["": 1, "K": 1_000, "M": 1_000_000, "G": 1_000_000_000, "T": 1_000_000_000_000]
        return try parse(trimmed, units: si, what: "bitrate", unitName: "bit/s", example: "880M or 4G (bits per second)",
                         original: text)
    }

    /// The lowest video bitrate `videoBitrate` accepts: below it, the number was almost
    /// certainly meant in Mbit/s.
    public static let minimumVideoBitrate: Int64 = 1_000_000

    /// A video stream's bitrate (`bitrate`), at least 1 Mbit/s.
    /// - Throws: `UsageError` below `minimumVideoBitrate`, suggesting the M suffix.
    public static func videoBitrate(_ text: String) throws -> Int64 {
        let bits = try bitrate(text)
        guard bits >= minimumVideoBitrate else {
            throw UsageError("bitrate '\(text)' is \(bits) bit/s, below 1 Mbit/s; video rates are quoted in Mbit/s: "
                             + "write e.g. \(text)M for \(text) Mbit/s")
        }
        return bits
    }

    private static func parse(_ text: String, units: [String: Int64], what: String, unitName: String, example: String,
                              original: String? = nil) throws -> Int64 {
        let shown = original ?? text
        let whole = text.prefix { $0.isASCII && $0.isNumber }
        var rest = text.dropFirst(whole.count)
        var fraction = Substring("")
        if rest.first == "." {
            fraction = rest.dropFirst().prefix { $0.isASCII && $0.isNumber }
            rest = rest.dropFirst(1 + fraction.count)
        }
        let suffix = rest.uppercased()
        guard !whole.isEmpty else {
            throw UsageError("invalid \(what) '\(shown)': expected a number with an optional unit, e.g. \(example)")
        }
        guard let unit = units[suffix] else {
            throw UsageError("invalid \(what) '\(shown)': unknown unit '\(rest)'; use e.g. \(example)")
        }
        guard fraction.count <= 6 else {
            throw UsageError("invalid \(what) '\(shown)': at most 6 decimals")
        }
        let tooLarge = UsageError("invalid \(what) '\(shown)': too large (the limit is \(Int64.max) \(unitName))")
        guard let value = Int64(whole) else { throw tooLarge }
        let (product, overflow) = value.multipliedReportingOverflow(by: unit)
        guard !overflow else { throw tooLarge }
        // Below 10^6 × 10^12, the fraction's product fits in 63 bits.
        let scale = Int64(pow10(fraction.count))
        let part = ((Int64(fraction) ?? 0) * unit + scale / 2) / scale
        if unit == 1 && !fraction.isEmpty && (Int64(fraction) ?? 0) != 0 {
            throw UsageError("invalid \(what) '\(shown)': a number without a unit is whole \(unitName)")
        }
        let (sum, sumOverflow) = product.addingReportingOverflow(part)
        guard !sumOverflow else { throw tooLarge }
        return sum
    }

    private static func pow10(_ exponent: Int) -> Int {
        (0..<exponent).reduce(1) { value, _ in value * 10 }
    }
}

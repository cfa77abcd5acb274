import FoundationEssentials

/// Human-readable byte counts in powers of 1024, as `df -h` and `ls -lh` print them.
package enum ByteFormat {
    /// One decimal: "64.0 MiB".
    package static func human(_ bytes: Int64) -> String {
        let (value, unit) = scaled(bytes, below: 1024)
        if unit == 0 { return "\(bytes) B" }
        return "\((value * 10).rounded() / 10) \(units[unit])"
    }

    /// Three significant digits: "2.98 GiB", "29.8 GiB", "298 GiB", so a recording visibly
    /// moves the figure where `human` would stay at "3.0 GiB".
    package static func significant(_ bytes: Int64) -> String {
        // 999.5 would print as "1000": move to the next unit before rounding gets there.
        let (value, unit) = scaled(bytes, below: 999.5)
        if unit == 0 { return "\(bytes) B" }
        let decimals = abs(value) < 9.995 ? 2 : abs(value) < 99.95 ? 1 : 0
        return DecimalText.fixed(value, digits: decimals) + " " + units[unit]
    }

    private static let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]

    /// `bytes` divided by 1024 until it is below `limit`, and the index of its unit.
    private static func scaled(_ bytes: Int64, below limit: Double) -> (Double, Int) {
        var value = Double(bytes)
        var unit = 0
        while abs(value) >= limit && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return (value, unit)
    }
}

import Foundation

/// Human-readable byte counts in powers of 1024 ("64.0 MiB"), as `df -h` and `ls -lh` print them.
public enum ByteFormat {
    public static func human(_ bytes: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]
        var value = Double(bytes)
        var unit = 0
        while abs(value) >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        if unit == 0 { return "\(bytes) B" }
        let tenths = (value * 10).rounded() / 10
        return "\(tenths) \(units[unit])"
    }
}

extension ByteFormat {
    /// Three significant digits in powers of 1024 ("2.98 GiB", "29.8 GiB", "298 GiB"), so a
    /// recording visibly moves the figure where `human` would stay at "3.0 GiB".
    public static func significant(_ bytes: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
        var value = Double(bytes)
        var unit = 0
        // 999.5 would print as "1000": move to the next unit before rounding gets there.
        while abs(value) >= 999.5 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        if unit == 0 { return "\(bytes) B" }
        let decimals = abs(value) < 9.995 ? 2 : abs(value) < 99.95 ? 1 : 0
        return String(format: "%.\(decimals)f", value) + " " + units[unit]
    }
}

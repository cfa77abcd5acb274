
/// Bit rates as codecs and links are quoted: SI units of bits per second ("880 Mbit/s",
/// "2.64 Gbit/s"), three significant digits.
package enum BitRateFormat {
    package static func human(_ bitsPerSecond: Int64) -> String {
        let units = ["bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"]
        var value = Double(bitsPerSecond)
        var unit = 0
        while abs(value) >= 1000 && unit < units.count - 1 {
            value /= 1000
            unit += 1
        }
        let digits = value >= 100 || unit == 0 ? 0 : value >= 10 ? 1 : 2
        var text = DecimalText.fixed(value, digits: digits)
        if digits > 0 { while text.hasSuffix("0") { text.removeLast() }; if text.hasSuffix(".") { text.removeLast() } }
        return "\(text) \(units[unit])"
    }
}

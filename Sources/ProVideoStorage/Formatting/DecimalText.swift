import Glibc

/// A number with a fixed count of digits after the point, as printf's `%.Nf` writes it (it is
/// printf's: vsnprintf(3), so rounding and "nan"/"inf" are the C library's), without
/// Foundation's `String(format:)`.
enum DecimalText {
    /// - Parameter digits: 0 to 20 digits after the point.
    static func fixed(_ value: Double, digits: Int) -> String {
        precondition((0...20).contains(digits), "\(digits) digits")
        let format = "%.\(digits)f"
        var buffer = [CChar](repeating: 0, count: 64)
        let length = Int(withVaList([value]) { vsnprintf(&buffer, buffer.count, format, $0) })
        if length >= buffer.count {
            // 1e300 with one digit is 302 characters.
            buffer = [CChar](repeating: 0, count: length + 1)
            _ = withVaList([value]) { vsnprintf(&buffer, buffer.count, format, $0) }
        }
        return String(decoding: buffer.prefix(max(length, 0)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

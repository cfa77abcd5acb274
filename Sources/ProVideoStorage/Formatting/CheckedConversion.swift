
/// Converting a floating-point value to an integer without a trap. Swift's `Int64(_: Double)`
/// stops the process (SIGILL) on NaN, an infinity or a value outside the integer's range, and
/// values read from the pool's files (a landing record's rate, a journal's time) are whatever
/// a pool member wrote there: every conversion of such a value, and of anything computed from
/// one, goes through this.
extension FixedWidthInteger {
    /// `value` rounded toward zero; nil when it is NaN, infinite or outside this type's range
    /// (`Int64(checked: 1e300)` is nil, `Int64(checked: -0.0)` is 0).
    package init?(checked value: Double) {
        guard value.isFinite, let integer = Self(exactly: value.rounded(.towardZero)) else { return nil }
        self = integer
    }
}

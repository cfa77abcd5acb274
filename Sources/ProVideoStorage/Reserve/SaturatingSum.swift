
extension Sequence where Element == Int64 {
    /// The sum, held at `Int64.max` instead of trapping: declared bitrates come from the user
    /// (`record --bitrate`, up to `Int64.max` each) and a forced capture may run beside another,
    /// so adding them could overflow; past 8 Ebit/s the exact figure no longer matters.
    func saturatingSum() -> Int64 {
        reduce(Int64(0)) { total, value in
            let (sum, overflow) = total.addingReportingOverflow(value)
            return overflow ? (value < 0 ? Int64.min : Int64.max) : sum
        }
    }
}

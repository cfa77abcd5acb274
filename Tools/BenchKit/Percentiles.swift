import ProVideoStorage

/// Exact percentiles of latency samples, in nanoseconds (nearest rank: the smallest sample
/// with at least q of all samples at or below it).
package enum Percentiles {
    /// p50, p99, p99.9 and max of `samples`; all 0 when there are none. Sorts a copy.
    package static func summary(_ samples: [UInt64]) -> LatencySummary {
        let sorted = samples.sorted()
        return LatencySummary(p50: rank(0.5, sorted), p99: rank(0.99, sorted), p999: rank(0.999, sorted),
                              max: sorted.last ?? 0)
    }

    /// The value at quantile `q` (0…1) of `sorted` (ascending), 0 when empty.
    package static func rank(_ q: Double, _ sorted: [UInt64]) -> UInt64 {
        guard !sorted.isEmpty else { return 0 }
        let index = Int((q * Double(sorted.count)).rounded(.up)) - 1
        return sorted[min(max(index, 0), sorted.count - 1)]
    }

    /// The median of `values` (the mean of the middle two for an even count), 0 when empty.
    package static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    /// The per-field maximum: a bound for summaries that cannot be merged exactly (each
    /// capture keeps its own histogram).
    package static func worst(_ a: LatencySummary, _ b: LatencySummary) -> LatencySummary {
        LatencySummary(p50: max(a.p50, b.p50), p99: max(a.p99, b.p99), p999: max(a.p999, b.p999), max: max(a.max, b.max))
    }
}


/// A fixed-size log-linear histogram of durations in nanoseconds: 8 sub-buckets per power of
/// two, so a percentile is reported within 12.5 % of the true value. All memory is allocated
/// at creation; `record` never allocates (it runs on the capture's append path).
package struct LatencyHistogram: Sendable {
    private static let subBuckets = 8
    private var counts = [UInt64](repeating: 0, count: 64 * 8)
    package private(set) var count: UInt64 = 0
    package private(set) var maximum: UInt64 = 0
    /// All samples added together, in nanoseconds.
    package private(set) var sum: UInt64 = 0

    package init() {}

    private static func index(_ value: UInt64) -> Int {
        if value < UInt64(subBuckets) { return Int(value) }
        let exponent = 63 - value.leadingZeroBitCount
        let mantissa = Int(value >> UInt64(exponent - 3)) & (subBuckets - 1)
        return (exponent - 2) * subBuckets + mantissa
    }

    /// The largest value that falls in bucket `index`.
    private static func upperBound(_ index: Int) -> UInt64 {
        if index < subBuckets { return UInt64(index) }
        let exponent = index / subBuckets + 2
        let mantissa = UInt64(index % subBuckets)
        return ((UInt64(subBuckets) + mantissa + 1) << UInt64(exponent - 3)) - 1
    }

    package mutating func record(_ nanoseconds: UInt64) {
        counts[Self.index(nanoseconds)] += 1
        count += 1
        sum &+= nanoseconds
        maximum = max(maximum, nanoseconds)
    }

    /// Adds every sample of `other` (e.g. to combine streams or repeats).
    package mutating func merge(_ other: LatencyHistogram) {
        for index in counts.indices { counts[index] += other.counts[index] }
        count += other.count
        sum &+= other.sum
        maximum = max(maximum, other.maximum)
    }

    /// The value at quantile `q` (0…1), in nanoseconds; 0 when empty. Never above `maximum`.
    package func percentile(_ q: Double) -> UInt64 {
        guard count > 0 else { return 0 }
        let rank = max(UInt64((q * Double(count)).rounded(.up)), 1)
        var seen: UInt64 = 0
        for (index, bucket) in counts.enumerated() where bucket > 0 {
            seen += bucket
            if seen >= rank { return min(Self.upperBound(index), maximum) }
        }
        return maximum
    }

    /// p50, p99, p99.9 and max, in nanoseconds.
    /// Calls `body` with the samples of at most each of `bounds` (ascending, nanoseconds), in
    /// one pass over the buckets, allocating nothing. Counted by bucket: a bucket whose upper
    /// bound exceeds a bound is left out, so a count is exact at bucket boundaries and low by at
    /// most one bucket (12.5%) in between.
    func forEachCumulativeCount(atMost bounds: [Int64], _ body: (UInt64) -> Void) {
        var total: UInt64 = 0
        var next = 0
        // Only buckets that hold samples: the bounds of the top buckets do not fit 64 bits.
        for index in counts.indices where counts[index] > 0 {
            let upper = Self.upperBound(index)
            while next < bounds.count && upper > UInt64(bounds[next]) {
                body(total)
                next += 1
            }
            total += counts[index]
        }
        for _ in next..<bounds.count { body(total) }
    }

    package var summary: LatencySummary {
        LatencySummary(p50: percentile(0.5), p99: percentile(0.99), p999: percentile(0.999), max: maximum)
    }
}

/// Latency percentiles in nanoseconds.
package struct LatencySummary: Codable, Sendable, Equatable {
    package var p50: UInt64
    package var p99: UInt64
    package var p999: UInt64
    package var max: UInt64

    package init(p50: UInt64, p99: UInt64, p999: UInt64, max: UInt64) {
        self.p50 = p50
        self.p99 = p99
        self.p999 = p999
        self.max = max
    }
}

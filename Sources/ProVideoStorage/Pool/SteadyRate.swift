
/// Whether a write rate has settled: a device's write cache takes the first gigabytes at its
/// burst rate, then the rate falls to what the media sustains. The rate is steady once the last
/// window's rate is within `tolerance` of the window before it, and no sooner than `minimum`.
/// Pure arithmetic over (time, bytes) samples, so the bandwidth measurement and the bench's
/// sizing trials share one rule.
package struct SteadyRate: Sendable {
    /// Nanoseconds per window (10 s: a window must hold many commits and many host flushes).
    package let window: UInt64
    /// The earliest a rate may be called steady, in nanoseconds (two windows at least).
    package let minimum: UInt64
    /// The largest relative difference between the last two windows' rates (0.1: 10 %).
    let tolerance: Double
    /// (nanoseconds since the start, bytes done by then), in time order.
    private(set) var samples: [(time: UInt64, bytes: Int64)] = [(0, 0)]

    package init(window: UInt64 = 10_000_000_000, minimum: UInt64 = 20_000_000_000, tolerance: Double = 0.1) {
        precondition(window > 0 && tolerance > 0, "a window and a tolerance above 0")
        self.window = window
        self.minimum = max(minimum, 2 * window)
        self.tolerance = tolerance
    }

    /// Records that `bytes` in all were done `time` nanoseconds after the start. Samples
    /// out of order are ignored.
    package mutating func record(time: UInt64, bytes: Int64) {
        guard let last = samples.last, time > last.time, bytes >= last.bytes else { return }
        samples.append((time, bytes))
    }

    /// Bytes per second between `start` and `end` nanoseconds, from the samples nearest them.
    package func rate(from start: UInt64, to end: UInt64) -> Double? {
        guard end > start, let first = sample(atOrBefore: start), let last = sample(atOrBefore: end),
              last.time > first.time else { return nil }
        return Double(last.bytes - first.bytes) / (Double(last.time - first.time) / 1e9)
    }

    /// Bytes per second up to the first sample a second or more after the start (or the last
    /// one): the device's cache, its best case.
    package var burst: Double? {
        guard let first = samples.first(where: { $0.time >= 1_000_000_000 }) ?? samples.last, first.time > 0 else { return nil }
        return Double(first.bytes) / (Double(first.time) / 1e9)
    }

    /// Bytes per second over the last window.
    package var lastWindow: Double? { elapsed >= window ? rate(from: elapsed - window, to: elapsed) : overall }

    /// Bytes per second over the whole run.
    var overall: Double? { rate(from: 0, to: elapsed) }

    /// The last window's rate once it agrees with the window before it; nil until then.
    package var steady: Double? {
        guard elapsed >= minimum, let last = rate(from: elapsed - window, to: elapsed),
              let before = rate(from: elapsed - 2 * window, to: elapsed - window), before > 0 else { return nil }
        return abs(last - before) / before <= tolerance ? last : nil
    }

    /// Nanoseconds from the start to the last sample.
    package var elapsed: UInt64 { samples.last!.time }

    private func sample(atOrBefore time: UInt64) -> (time: UInt64, bytes: Int64)? {
        var low = 0, high = samples.count - 1
        guard samples[0].time <= time else { return nil }
        while low < high {
            let middle = (low + high + 1) / 2
            if samples[middle].time <= time { low = middle } else { high = middle - 1 }
        }
        return samples[low]
    }
}


/// What a running capture publishes to other processes beside its length, in the rest of its
/// `progress` block (rewritten at most every 250 ms, `CaptureWriter.progressInterval`): the counters
/// `status`, `status --watch` and `provideo metrics` show for each capture. Little-endian
/// 64-bit words after the length, in the order of the fields; a block written by an older
/// version holds zeros there.
package struct CaptureCounters: Codable, Sendable, Equatable {
    /// Appends that found every buffer in flight (the disk behind the stream).
    package var overruns: Int64
    /// Appends refused by the overrun policy (frames the recorder dropped).
    package var overrunFailures: Int64
    /// Short write completions written again from where they stopped.
    package var shortWritesRetried: Int64
    /// Capture buffers handed to the disk and not yet landed.
    package var buffersInFlight: Int64
    /// Durability commits completed.
    package var commits: Int64
    /// Time `append` held the recorder's thread, in nanoseconds.
    package var appendLatency: LatencyBuckets
    /// Time from a buffer's submission to its write's completion, in nanoseconds.
    package var completionLatency: LatencyBuckets

    package static let firstWord = 1
    package static let words = 5 + 2 * LatencyBuckets.words


    /// The most a count of events (appends, overruns, commits, latency samples) may hold: 2^53,
    /// the largest whole number a `Double` (a Prometheus sample) keeps exact; a million events
    /// a second would take 285 years to reach it.
    static let maximumCount: Int64 = 1 << 53
    /// The most buffers a capture may have in flight: 2^24 (16,777,216). A capture has at most
    /// its buffer budget over its write size in flight, and its buffers are memory: 2^24 of the
    /// smallest (512 bytes) already take 8 GiB, of the default 4 MiB, 64 TiB.
    static let maximumBuffersInFlight: Int64 = 1 << 24

    /// The counters in a `progress` block; nil ("counters unknown") when it is too short to
    /// hold them or when any of them is out of range: a count below 0 or above `maximumCount`,
    /// buffers in flight below 0 or above `maximumBuffersInFlight`, or a histogram that no
    /// capture could have written (`LatencyBuckets.isInRange`). The block is read from disk,
    /// where any pool member may write (Docs/SECURITY.md), and is only informative: an
    /// impossible block shows as no counters, never as a crazy number (`-1 buffer(s) in
    /// flight`, 2^63 overruns).
    package init?(block bytes: [UInt8]) {
        guard bytes.count >= (Self.firstWord + Self.words) * 8 else { return nil }
        let values = (0..<Self.words).map { index -> Int64 in
            let start = (Self.firstWord + index) * 8
            return Int64(bitPattern: (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[start + $1]) << (8 * $1) })
        }
        (overruns, overrunFailures, shortWritesRetried, buffersInFlight, commits) = (values[0], values[1], values[2], values[3], values[4])
        appendLatency = LatencyBuckets(values: Array(values[5..<5 + LatencyBuckets.words]))
        completionLatency = LatencyBuckets(values: Array(values[(5 + LatencyBuckets.words)...]))
        guard isInRange else { return nil }
    }

    /// Whether every counter is one a capture could have published (see `init?(block:)`).
    var isInRange: Bool {
        [overruns, overrunFailures, shortWritesRetried, commits].allSatisfy { (0...Self.maximumCount).contains($0) }
            && (0...Self.maximumBuffersInFlight).contains(buffersInFlight)
            && appendLatency.isInRange && completionLatency.isInRange
    }
}

/// A latency histogram as Prometheus exports one: how many samples took at most each bound
/// (cumulative), the number of samples, their sum and the longest, in nanoseconds.
package struct LatencyBuckets: Codable, Sendable, Equatable {
    /// The bounds, in nanoseconds: 100 µs to 2.5 s, the span between an append that copies a
    /// frame and a disk stall that outlasts the buffers.
    package static let boundsNanoseconds: [Int64] = [
        100_000, 250_000, 500_000, 1_000_000, 2_500_000, 5_000_000, 10_000_000, 25_000_000, 50_000_000,
        100_000_000, 250_000_000, 500_000_000, 1_000_000_000, 2_500_000_000,
    ]
    package static let words = boundsNanoseconds.count + 3
    /// No samples.
    package static let empty = LatencyBuckets(values: Array(repeating: 0, count: words))

    /// Samples at most each bound of `boundsNanoseconds`, cumulative.
    package var cumulativeCounts: [Int64]
    package var count: Int64
    package var sumNanoseconds: Int64
    package var maximumNanoseconds: Int64

    package init(values: [Int64]) {
        let bounds = Self.boundsNanoseconds.count
        cumulativeCounts = Array(values[..<bounds])
        (count, sumNanoseconds, maximumNanoseconds) = (values[bounds], values[bounds + 1], values[bounds + 2])
    }

    /// Whether a capture could have written this histogram: `count` from 0 to
    /// `CaptureCounters.maximumCount`; the cumulative counts from 0, never falling, and none
    /// above `count`; the sum and the longest sample not below 0, the longest not above the
    /// sum, and both 0 without samples.
    var isInRange: Bool {
        guard (0...CaptureCounters.maximumCount).contains(count), sumNanoseconds >= 0, maximumNanoseconds >= 0,
              maximumNanoseconds <= sumNanoseconds, count > 0 || sumNanoseconds == 0 else { return false }
        var previous: Int64 = 0
        for cumulative in cumulativeCounts {
            guard cumulative >= previous, cumulative <= count else { return false }
            previous = cumulative
        }
        return true
    }

}

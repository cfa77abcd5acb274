import ProVideoJournal

// The progress block's format is the Journal's (`CaptureCounters`); what goes into it is the
// capture's statistics, which live up here.
extension CaptureCounters {
    /// Writes a capture's counters into its progress `block`, after the first word (the
    /// length). Runs on the recorder's thread: word by word, nothing allocated, one pass over
    /// each histogram.
    package static func store(_ statistics: CaptureStatistics, buffersInFlight: Int, into block: UnsafeMutableRawBufferPointer) {
        var word = firstWord
        func put(_ value: Int64) {
            block.storeBytes(of: UInt64(bitPattern: value).littleEndian, toByteOffset: word * 8, as: UInt64.self)
            word += 1
        }
        func put(_ histogram: LatencyHistogram) {
            histogram.forEachCumulativeCount(atMost: LatencyBuckets.boundsNanoseconds) { put(Int64($0)) }
            put(Int64(histogram.count))
            put(Int64(bitPattern: histogram.sum))
            put(Int64(histogram.maximum))
        }
        put(statistics.overruns)
        put(statistics.overrunFailures)
        put(statistics.shortWritesRetried)
        put(Int64(buffersInFlight))
        put(statistics.commits)
        put(statistics.appendLatency)
        put(statistics.completionLatency)
    }
}

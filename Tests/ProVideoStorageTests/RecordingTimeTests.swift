import Testing
@testable import ProVideoStorage
@testable import ProVideoWritePath

/// Remaining capacity as recording time, the codec table behind `status --codec`, and the
/// three-significant-digit sizes of `status`.
@Suite struct RecordingTimeTests {
    @Test func twoTebibytesAtTwelveGigabits() throws {
        let seconds = try #require(RecordingTime.seconds(bytes: 2 << 40, atBitrate: 12_000_000_000))
        #expect(abs(seconds - 1466.0155037013333) < 1e-9)
    }

    @Test(arguments: [Int64(0), -1, Int64.min])
    func noBitrateIsUnknown(_ bitrate: Int64) {
        #expect(RecordingTime.seconds(bytes: 1 << 30, atBitrate: bitrate) == nil)
    }

    @Test func extremesStayFiniteAndNotNegative() throws {
        let most = try #require(RecordingTime.seconds(bytes: Int64.max, atBitrate: 1))
        #expect(most.isFinite && most > 7.3e19)
        #expect(RecordingTime.seconds(bytes: -4096, atBitrate: 880_000_000) == 0)
    }

    @Test func statusUsesItsRemainingCapacity() throws {
        let status = PoolStatus(path: "/p", initialCapacity: 1 << 30, remainingCapacity: 110_000_000, busyReasons: [],
                                filesystem: "ext4", directIOAlignment: DirectIOAlignment(memory: 512, offset: 512),
                                device: DeviceTopology(path: nil, logicalSectorSize: 512, physicalSectorSize: 512,
                                                       minimumIOSize: 512, optimalIOSize: 0),
                                reservedBytesOnDisk: 1 << 30, zeroFilled: false, engine: "io_uring",
                                recordingSecondsRemaining: nil, maxCaptures: nil, bandwidth: nil,
                                admissibleBitrate: nil, admittedBitrate: 0, captures: [])
        #expect(status.remainingDuration(atBitrate: 880_000_000) == 1.0)
        #expect(status.remainingDuration(atBitrate: 0) == nil)
    }

    @Test(arguments: [(Int64(3_196_637_184), "2.98 GiB"), (999, "999 B"), (1023, "1.00 KiB"), (1_048_064, "1.00 MiB"), (1_000_000, "977 KiB"),
                      (10 << 30, "10.0 GiB"), (300 << 30, "300 GiB"), (2 << 40, "2.00 TiB"), (1_536, "1.50 KiB")])
    func threeSignificantDigits(_ bytes: Int64, _ text: String) {
        #expect(ByteFormat.significant(bytes) == text)
    }
}

/// The counters a capture publishes in its progress block, read back as `status` reads them.
@Suite struct CaptureCountersTests {
    @Test func countersSurviveTheProgressBlock() throws {
        var statistics = CaptureStatistics(engine: "io_uring")
        statistics.overruns = 3
        statistics.shortWritesRetried = 2
        statistics.commits = 7
        for latency: UInt64 in [50_000, 90_000, 300_000, 4_000_000, 3_000_000_000] { statistics.appendLatency.record(latency) }
        let block = UnsafeMutableRawBufferPointer.allocate(byteCount: 512, alignment: 512)
        defer { block.deallocate() }
        block.initializeMemory(as: UInt8.self, repeating: 0)
        CaptureCounters.store(statistics, buffersInFlight: 4, into: block)
        let counters = try #require(CaptureCounters(block: Array(block)))
        #expect(counters.overruns == 3 && counters.shortWritesRetried == 2 && counters.commits == 7)
        #expect(counters.buffersInFlight == 4)
        #expect(counters.appendLatency.count == 5 && counters.appendLatency.maximumNanoseconds == 3_000_000_000)
        #expect(counters.appendLatency.sumNanoseconds == 3_004_440_000)
        // At most 100 µs: 50 and 90 µs; at most 5 ms: four; 2.5 s: still four (3 s is above).
        #expect(counters.appendLatency.cumulativeCounts[0] == 2)
        #expect(counters.appendLatency.cumulativeCounts[5] == 4)
        #expect(counters.appendLatency.cumulativeCounts.last == 4)
        #expect(counters.completionLatency == LatencyBuckets.empty)
        #expect(CaptureCounters(block: Array(repeating: 0, count: 64)) == nil)
    }
}

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

    /// Spot values from the sources cited beside the table, and every name unique.
    @Test(arguments: [("prores-422-hq-2160p30", Int64(885_000_000)), ("prores-4444-xq-2160p60", 3_981_000_000),
                      ("prores-proxy-1080p24", 36_000_000), ("prores-lt-1080p50", 170_000_000),
                      ("dnxhr-444-2160p60", 3_497_656_320), ("dnxhr-hq-1080p30", 220_200_960),
                      ("DNxHR-LB-2160p25", 149_913_600), ("prores-422-hq-2160p29.97", 884_115_884),
                      ("prores-422-hq-1080p23.976", 175_824_175), ("dnxhr-hq-1080p29.97", 219_980_979),
                      ("prores-422-hq-2160p23.98", 706_293_706)])
    func codecRates(_ name: String, _ bitrate: Int64) {
        #expect(CodecTable.rate(named: name)?.bitrate == bitrate)
    }

    @Test func codecTableCoversEveryProfileOnce() {
        #expect(CodecTable.all.count == (6 + 5) * 2 * 8)
        #expect(Set(CodecTable.all.map(\.name)).count == CodecTable.all.count)
        #expect(CodecTable.rate(named: "prores-9999") == nil)
        #expect(CodecTable.rate(named: "prores-422-hq-2160p29.97")?.frameRate == FrameRate(numerator: 30_000, denominator: 1001, label: "29.97"))
        #expect(CodecTable.rate(named: "prores-422-hq-2160p30")?.fps == 30)
    }

    /// Each DNxHR frame size is the codec's rule for a resolution-independent frame: macroblocks
    /// (16×16, rounded up) × the profile's packet scale / 255, rounded to 4096 bytes (FFmpeg's
    /// `avpriv_dnxhd_get_hr_frame_size`; the scales of SMPTE ST 2019-1's DNxHR profiles).
    @Test func dnxhrFrameSizesFollowTheCodecsRule() {
        let packetScale: [String: Int64] = ["lb": 5888, "sq": 18944, "hq": 28672, "hqx": 28672, "444": 57344]
        func frameBytes(_ profile: String, width: Int64, height: Int64) -> Int64 {
            let bytes = (height + 15) / 16 * ((width + 15) / 16) * packetScale[profile]! / 255
            return max((bytes + 2048) / 4096 * 4096, 8192)
        }
        for (profile, scale) in packetScale {
            #expect(scale > 0)
            #expect(CodecTable.rate(named: "dnxhr-\(profile)-1080p25")?.bitrate == frameBytes(profile, width: 1920, height: 1080) * 8 * 25)
            #expect(CodecTable.rate(named: "dnxhr-\(profile)-2160p25")?.bitrate == frameBytes(profile, width: 3840, height: 2160) * 8 * 25)
        }
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

@testable import BenchKit
import ProVideoStorage
import TestSupport
import Testing

@Suite struct BenchStatisticsTests {
    @Test func percentilesOfOneToThousand() {
        let summary = Percentiles.summary((1...1000).map { UInt64($0) }.shuffled())
        #expect(summary == LatencySummary(p50: 500, p99: 990, p999: 999, max: 1000))
    }

    @Test func percentilesOfFewSamplesUseNearestRank() {
        #expect(Percentiles.summary([]) == LatencySummary(p50: 0, p99: 0, p999: 0, max: 0))
        #expect(Percentiles.summary([7]) == LatencySummary(p50: 7, p99: 7, p999: 7, max: 7))
        // Ten samples: p50 is the 5th, p99 and p99.9 are the 10th.
        let summary = Percentiles.summary([10, 1, 9, 2, 8, 3, 7, 4, 6, 5])
        #expect(summary == LatencySummary(p50: 5, p99: 10, p999: 10, max: 10))
    }

    @Test func medianOfOddAndEvenCounts() {
        #expect(Percentiles.median([3, 1, 2]) == 2)
        #expect(Percentiles.median([4, 1, 3, 2]) == 2.5)
        #expect(Percentiles.median([]) == 0)
    }

    @Test func constantFrameSizesAddUpToTheBitrate() {
        let sizes = FrameSizes.constant(bitrate: 880_000_000, fps: 30000.0 / 1001.0, count: 30000)
        // 1001 s of 29.97 fps at 880 Mbit/s: exactly 110,110,000,000 bytes, to the byte.
        #expect(sizes.total == 110_110_000_000)
        #expect(sizes.largest - (sizes.sizes.min() ?? 0) <= 1)
    }

    @Test func traceIsScaledToTheBitrateAndKeepsItsShape() {
        let sizes = FrameSizes.trace([100, 300], bitrate: 8 * 400 * 25, fps: 25, count: 4)
        #expect(sizes.sizes == [200, 600, 200, 600])
        #expect(FrameSizes.trace([5, 6, 7], bitrate: nil, fps: 25, count: 5).sizes == [5, 6, 7, 5, 6])
    }

    @Test func readsFFprobeOutputAndRejectsGarbage() throws {
        let directory = TestSupport.scratchDirectory()
        defer { TestSupport.removeTree(directory) }
        try "# ffprobe packet sizes\n1200\n\n1300,\n".write(toFile: directory + "/ok.txt", atomically: true, encoding: .utf8)
        #expect(try FrameSizes.readTrace(directory + "/ok.txt") == [1200, 1300])
        try "1200\nabc\n".write(toFile: directory + "/bad.txt", atomically: true, encoding: .utf8)
        #expect(throws: BenchError.self) { try FrameSizes.readTrace(directory + "/bad.txt") }
    }
}

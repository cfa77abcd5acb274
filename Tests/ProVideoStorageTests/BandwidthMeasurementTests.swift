import Foundation
import TestSupport
import Testing
@testable import ProVideoStorage

/// The bandwidth a pool is admitted against is the rate its device sustains past its write
/// cache, not the first second's burst (issue 28: one-second measurements reported 14.8 to
/// 66.7 Gbit/s on a disk that sustained about 23).
@Suite struct BandwidthMeasurementTests {
    /// A second's samples at `rates` bytes per second, one rate per second.
    static func steadyRate(_ rates: [Double]) -> SteadyRate {
        var rate = SteadyRate()
        var bytes = 0.0
        for (second, bytesPerSecond) in rates.enumerated() {
            bytes += bytesPerSecond
            rate.record(time: UInt64(second + 1) * 1_000_000_000, bytes: Int64(bytes))
        }
        return rate
    }

    /// A cache that takes 16 GB at 2 GB/s, then 500 MB/s: not steady while the first window
    /// holds the cache, steady at the media's rate once two windows are past it.
    @Test func aCacheThenTheMediaSettlesAtTheMediasRate() {
        let profile = Array(repeating: 2e9, count: 8) + Array(repeating: 5e8, count: 22)
        let early = Self.steadyRate(Array(profile.prefix(20)))
        #expect(early.steady == nil)
        #expect(early.burst == 2e9)
        #expect(early.lastWindow == 5e8)
        let late = Self.steadyRate(profile)
        #expect(late.steady == 5e8)
        #expect(late.burst == 2e9)
        #expect(abs(late.overall! - (16e9 + 22 * 5e8) / 30) < 1)
    }

    /// Rates within 10 % of each other are steady; a slide of 20 % per window is not.
    @Test func steadyMeansTwoWindowsWithinTheTolerance() {
        let jitter = (0..<20).map { $0 % 2 == 0 ? 5e8 : 5.5e8 }
        #expect(Self.steadyRate(jitter).steady == 5.25e8)
        let sliding = Array(repeating: 1e9, count: 10) + Array(repeating: 8e8, count: 10)
        #expect(Self.steadyRate(sliding).steady == nil)
        #expect(Self.steadyRate(Array(repeating: 1e9, count: 19)).steady == nil, "not before 20 s")
    }

    /// A pool too small to write past a device's cache measures briefly and says why its rate
    /// is not a settled one; the figure it sets is the one it reports.
    @Test func aSmallPoolSaysItDidNotSettle() throws {
        try withPool(capacity: 16 << 20) { pool, _ in
            let measurement = try pool.measureBandwidth()
            #expect(!measurement.settled)
            #expect(measurement.unsettledReason?.contains("rewritten 16 times") == true, "\(measurement)")
            #expect(measurement.bytes >= 16 * (16 << 20))
            #expect(measurement.sustained > 0 && measurement.burst > 0)
            // Within the measurement's own limit (120 s): the 16-rewrites rule stopped it, not time.
            #expect(measurement.seconds > 0 && measurement.seconds <= 120, "\(measurement)")
            #expect(measurement.commitInterval == 1_000_000_000)
            #expect(try pool.remainingCapacity == 16 << 20, "the reserve is whole after it")
        }
    }

    /// `Pool.create` measures the bandwidth by default and admits captures against it, as
    /// `provideo create` does (issue 42: a pool made from Swift had no admission, so two
    /// recorders could oversubscribe its disk); `measuringBandwidth: false` or a given
    /// `bandwidth` skips it, and a reserve under one 4 MiB write is left without one.
    @Test func createMeasuresTheBandwidthUnlessToldNotTo() async throws {
        try TestSupport.withScratch("create-measures") { scratch in
            let measured = try Pool.create(at: scratch + "/measured", capacity: 16 << 20)
            defer { try? measured.destroy() }
            let figure = try #require(try measured.bandwidth, "no bandwidth after a default create")
            #expect(figure > 0 && figure < 1 << 50, "bandwidth \(figure)")
            #expect(try measured.remainingCapacity == 16 << 20, "the reserve is whole after the measurement")
            let skipped = try Pool.create(at: scratch + "/skipped", capacity: 16 << 20, measuringBandwidth: false)
            defer { try? skipped.destroy() }
            #expect(try skipped.bandwidth == nil)
            let given = try Pool.create(at: scratch + "/given", capacity: 16 << 20, bandwidth: 123_000_000)
            defer { try? given.destroy() }
            #expect(try given.bandwidth == 123_000_000)
            let tiny = try Pool.create(at: scratch + "/tiny", capacity: 2 << 20)
            defer { try? tiny.destroy() }
            #expect(try tiny.bandwidth == nil, "a reserve under one write was given a bandwidth")
        }
        let scratch = TestSupport.scratchDirectory("create-measures-async")
        defer { TestSupport.removeTree(scratch) }
        let measured = try await Pool.create(at: scratch + "/pool", capacity: 16 << 20)
        defer { try? measured.destroy() }
        #expect(try measured.bandwidth != nil, "no bandwidth after a default async create")
    }
}

@testable import BenchKit
import Foundation
import Glibc
import TestSupport
import Testing

/// The noisy neighbour keeps writing through a full filesystem, and a sizing run's scratch
/// pool leaves the filesystem room for it and for the grants in flight.
struct NoiseWriterTests {
    /// It used to trap on ENOSPC, so the trials after a full moment ran without noise.
    @Test(.enabled(if: TestSupport.isRoot, "needs root: a tmpfs mount"))
    func aFullFilesystemStartsTheFileAgainAndTheWritingGoesOn() throws {
        try LoopFilesystem.with("tmpfs", megabytes: 8) { fs in
            var rounds = 0
            // 40 rounds of 1 MiB into 8 MiB: full about every eighth round.
            let outcome = try NoiseWriter.write(file: fs.mountPoint + "/noise", limit: 64 << 20) {
                rounds += 1
                return rounds <= 40
            }
            #expect(outcome.restartsOnFullFilesystem >= 3, "\(outcome)")
            #expect(outcome.written >= 24 << 20, "\(outcome)")
        }
    }

    @Test func theLimitStartsTheFileAgainAndAFileThatCannotBeMadeIsAnError() throws {
        try TestSupport.withScratch { scratch in
            var rounds = 0
            let outcome = try NoiseWriter.write(file: scratch + "/noise", limit: 2 << 20) {
                rounds += 1
                return rounds <= 5
            }
            #expect(outcome == NoiseWriter.Outcome(written: 5 << 20, restartsOnFullFilesystem: 0))
            // 5 MiB written with a 2 MiB limit: cut back at 2 and 4, 1 MiB left.
            #expect(try FileManager.default.attributesOfItem(atPath: scratch + "/noise")[.size] as? Int == 1 << 20)
            #expect(throws: BenchError.self) {
                try NoiseWriter.write(file: scratch + "/missing/noise", limit: 1 << 20) { true }
            }
        }
    }

    @Test func theScratchPoolLeavesRoomForTheNeighbourAndTheGrantsInFlight() {
        let bitrate: Int64 = 884_000_000
        let settings = Sizing.Settings(codec: nil, bitrate: bitrate, fps: 29.97, streams: 1...64,
                                       minimumTrial: 30_000_000_000, maximumTrial: 150_000_000_000)
        let perStream = settings.poolBytesPerStream(capacity: .max)
        // A grant is two seconds of stream (`CaptureOptions.grantStep`); two captures a stream,
        // and the stream's share of the leads awaiting their cuts (an eighth of the pool).
        let inFlight = 2 * (bitrate / 8 * 2) + perStream / 8
        let noise: Int64 = 4 << 30, spare: Int64 = 4 << 30
        let free = noise + spare + 10 * (perStream + inFlight) + 1
        #expect(settings.scratchPoolBytes(free: free, noiseBytes: noise, wanted: 64) == 10 * perStream)
        #expect(settings.scratchPoolBytes(free: free, noiseBytes: noise, wanted: 3) == 3 * perStream)
        #expect(settings.scratchPoolBytes(free: free - 2, noiseBytes: noise, wanted: 64) == 9 * perStream)
        #expect(settings.scratchPoolBytes(free: 1 << 30, noiseBytes: noise, wanted: 64) == 64 << 20)
    }
}

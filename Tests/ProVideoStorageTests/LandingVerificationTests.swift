import Foundation
import Glibc
import TestSupport
import Testing
@testable import ProVideoStorage

/// A landing whose copy does not match what was read from the pool (a byte changed on its way
/// to the destination, through the swappable `pwrite`) is never published: the take stays in
/// the pool, the failure is recorded with a back-off, and the next attempt copies it again and
/// lands it byte-identical. The destination is a tmpfs (another filesystem than the pool's).
@Suite(.serialized, .enabled(if: TestSupport.isRoot, "needs root: a tmpfs mount"))
struct LandingVerificationTests {
    @Test func aCorruptedCopyIsNeverPublished() throws {
        try LoopFilesystem.with("tmpfs", megabytes: 64) { fs in
            try TestSupport.withScratch { scratch in
                let destination = fs.mountPoint + "/take.mov"
                let pool = try Pool.create(at: scratch + "/pool", capacity: 32 << 20, measuringBandwidth: false)
                defer { try? Pool.open(at: pool.path).destroy() }
                var options = CaptureOptions(bitrate: 100_000_000)
                options.landing = .background
                let capture = try pool.startCapture(to: destination, options: options)
                let bytes = TestSupport.pattern(20 << 20, seed: 9)
                try capture.append(bytes)
                let result = try capture.finish()
                #expect(result.landingTo == destination)
                #expect(result.path.hasPrefix(pool.path + "/recordings/"))

                let corrupted = Shared(false)
                var calls = SystemCalls.live
                calls.pwrite = { fd, buffer, count, offset in
                    guard TestSupport.path(of: fd).hasSuffix(".partial"), !corrupted.update({ $0 }) else {
                        return SystemCalls.live.pwrite(fd, buffer, count, offset)
                    }
                    corrupted.update { $0 = true }
                    var changed = Array(UnsafeRawBufferPointer(start: buffer, count: count))
                    changed[count / 2] ^= 0xFF
                    return SystemCalls.live.pwrite(fd, changed, count, offset)
                }
                let failed = try Pool.open(at: pool.path, systemCalls: calls).landPending(retryAfter: 60)
                #expect(failed.map(\.landed) == [false])
                #expect(failed.first?.error?.contains("differs from the recording") == true, "\(failed)")
                #expect(!FileManager.default.fileExists(atPath: destination))
                #expect(FileManager.default.fileExists(atPath: result.path))
                let waiting = try #require(try pool.landings().first)
                #expect(waiting.landedBytes == 0 && waiting.attempts == 1)
                #expect((waiting.nextAttemptAt ?? 0) > Date().timeIntervalSince1970 + 50)

                let landed = try Pool.open(at: pool.path).landPending()
                #expect(landed.map(\.landed) == [true], "\(landed)")
                let identical = TestSupport.fileHolds(destination, bytes)
                #expect(identical)
                #expect(try pool.landings().isEmpty)
                #expect(try pool.remainingCapacity == pool.initialCapacity)
            }
        }
    }
}

/// A capped landing held up by a slow flush does not catch up at full speed: it keeps at most
/// `burstSeconds` of credit (CI measured 168 MB/s chunks under a 8 MB/s cap after a stall).
@Suite struct LandingPaceTests {
    @Test func aStalledTransferKeepsAQuarterSecondOfCredit() {
        let second: UInt64 = 1_000_000_000, rate: Int64 = 8_000_000
        // On schedule: 8 MB sent 0.5 s in sleeps the other half second.
        let early = LandingTransfer.pace(sent: 8_000_000, rate: rate, started: 10 * second, now: 10 * second + second / 2)
        #expect(abs(early.sleep - 0.5) < 1e-9 && early.started == 10 * second)
        // 5 s late for 8 MB: the start moves up so that only 0.25 s is owed, and the next
        // 8 MB then waits 0.75 s instead of going out at once.
        let late = LandingTransfer.pace(sent: 8_000_000, rate: rate, started: 10 * second, now: 16 * second)
        #expect(late.sleep == 0)
        #expect(late.started == 16 * second - UInt64(1.25 * Double(second)))
        let next = LandingTransfer.pace(sent: 16_000_000, rate: rate, started: late.started, now: 16 * second)
        #expect(abs(next.sleep - 0.75) < 1e-9)
        // Within the credit nothing moves.
        let slightly = LandingTransfer.pace(sent: 8_000_000, rate: rate, started: 10 * second, now: 11 * second + second / 10)
        #expect(slightly.sleep == 0 && slightly.started == 10 * second)
    }
}

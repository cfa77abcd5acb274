import Foundation
import Glibc
import ProVideoSystem
import TestSupport
import Testing
@testable import ProVideoStorage

/// What landing reports is what it proved: a take whose transfer state cannot be probed is not
/// shown waiting, and space a landing could not return to the reserve is named on its result.
@Suite(.serialized, .enabled(if: TestSupport.isRoot, "needs root: a tmpfs mount"))
struct LandingOnProofTests {
    /// A pool with one 1 MiB take waiting to land on a tmpfs of its own.
    private static func withTakeWaiting(_ body: (Pool, String) throws -> Void) throws {
        try LoopFilesystem.with("tmpfs", megabytes: 16) { fs in
            try TestSupport.withScratch { scratch in
                let pool = try Pool.create(at: scratch + "/pool", capacity: 24 << 20, measuringBandwidth: false)
                defer { try? Pool.open(at: pool.path).destroy() }
                var options = CaptureOptions(bitrate: 100_000_000)
                options.landing = .background
                let capture = try pool.startCapture(to: fs.mountPoint + "/take.mov", options: options)
                try capture.append(TestSupport.pattern(1 << 20, seed: 7))
                _ = try capture.finish()
                try body(pool, fs.mountPoint + "/take.mov")
            }
        }
    }

    @Test func aTakeWhoseLockCannotBeProbedIsUnknownNotWaiting() throws {
        try Self.withTakeWaiting { pool, destination in
            let waiting = try #require(try pool.landings().first)
            #expect(waiting.transferring == false && waiting.transferringUnknown == nil)
            // A symlink in the take's place: open(O_NOFOLLOW) fails with ELOOP, so no lock can
            // be probed (read as "not locked", it would show a take another lander copies as waiting).
            let aside = waiting.path + "-aside"
            #expect(rename(waiting.path, aside) == 0)
            #expect(symlink(aside, waiting.path) == 0)
            let unknown = try #require(try pool.landings().first)
            #expect(unknown.transferring == nil)
            #expect(unknown.transferringUnknown?.contains(waiting.path) == true, "\(unknown)")
            #expect(unlink(waiting.path) == 0 && rename(aside, waiting.path) == 0)
            #expect(try pool.landPending().map(\.landed) == [true])
            #expect(FileManager.default.fileExists(atPath: destination))
        }
    }

    @Test func aLandingWhoseSpaceCannotBeReturnedSaysSoAndABusyPoolIsNoFailure() throws {
        for (failure, named) in [(ProVideoError(.ioError, "injected refill failure", errno: EIO), true),
                                 (ProVideoError(.busy, "injected busy pool"), false)] {
            try Self.withTakeWaiting { pool, destination in
                let landing = Landing(layout: pool.layout, access: pool.access, calls: pool.calls,
                                      held: { try pool.heldRecordings() }, replenish: { throw failure })
                let results = try landing.land()
                #expect(results.count == 1 && results.first?.landed == true, "\(results)")
                #expect((results.first?.reserveNotRefilled?.contains("injected refill failure") == true) == named,
                        "\(failure.code): \(results)")
                // The space is still the filesystem's: the refill did not run, and the next does it.
                #expect(try pool.remainingCapacity < pool.initialCapacity)
                #expect(try pool.replenish().remainingCapacity == pool.initialCapacity)
                #expect(FileManager.default.fileExists(atPath: destination))
            }
        }
    }
}

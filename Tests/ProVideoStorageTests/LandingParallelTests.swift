import Foundation
import Glibc
import TestSupport
import Testing
@testable import ProVideoStorage

/// Several takes land at once (`parallel`), and a take another process is landing (its OFD
/// lock held) is left to that process: each take is copied by exactly one lander.
@Suite(.serialized, .enabled(if: TestSupport.isRoot, "needs root: a tmpfs mount"))
struct LandingParallelTests {
    @Test func takesLandInParallelAndALockedTakeIsLeftAlone() throws {
        try LoopFilesystem.with("tmpfs", megabytes: 64) { fs in
            try TestSupport.withScratch { scratch in
                let pool = try Pool.create(at: scratch + "/pool", capacity: 40 << 20, measuringBandwidth: false)
                defer { try? Pool.open(at: pool.path).destroy() }
                var options = CaptureOptions(bitrate: 100_000_000)
                options.landing = .background
                var takes: [String: [UInt8]] = [:]
                for index in 0..<4 {
                    let destination = "\(fs.mountPoint)/take-\(index).mov"
                    let capture = try pool.startCapture(to: destination, options: options)
                    let bytes = TestSupport.pattern(3 << 20, seed: UInt64(index + 1))
                    try capture.append(bytes)
                    _ = try capture.finish()
                    takes[destination] = bytes
                }
                let waiting = try pool.landings()
                #expect(waiting.count == 4)
                // Another lander holds the first take.
                let other = try FileDescriptor.open(waiting[0].path, O_RDWR)
                #expect(try other.lock(0, 1, wait: false))
                #expect(try pool.landings().first?.transferring == true)

                let results = try pool.landPending(parallel: 3)
                #expect(results.count == 3 && results.allSatisfy(\.landed), "\(results)")
                #expect(Set(results.map(\.destination)) == Set(waiting[1...].map(\.destination)))
                #expect(try pool.landings().map(\.path) == [waiting[0].path])
                other.unlock(0, 1)
                #expect(try pool.landPending(parallel: 3).map(\.landed) == [true])
                for (destination, bytes) in takes {
                    let identical = TestSupport.fileHolds(destination, bytes)
                    #expect(identical, "\(destination)")
                }
                #expect(try pool.remainingCapacity == pool.initialCapacity)
            }
        }
    }
}

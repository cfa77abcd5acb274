import Foundation
import Glibc
import TestSupport
import Testing
@testable import ProVideoStorage

/// A capture whose `progress` cannot be opened (EMFILE in a recorder busy with many captures)
/// has a recorder that may be alive: the pool opened beside it salvages nothing of it, names
/// it undecided, and the capture goes on to a whole take. Read as "dead", the open salvaged
/// the running capture under its recorder (issue 38: only a timing assertion noticed).
@Suite struct LivenessUnknownTests {
    @Test(arguments: [EMFILE, ENFILE, EIO])
    func aCaptureWhoseLockCannotBeReadIsLeftRunning(errno refused: Int32) throws {
        let refusals = Shared(0)
        var calls = SystemCalls.live
        calls.lockProbeOpen = { _ in
            refusals.update { $0 += 1 }
            return refused
        }
        try withPool { (pool, scratch) throws in
            let destination = scratch + "/take.mov"
            var options = testOptions
            options.durabilityInterval = 0
            let capture = try pool.startCapture(to: destination, options: options)
            let frames = (0..<16).map { TestSupport.pattern(256 << 10, seed: UInt64($0)) }
            for frame in frames[..<8] { try capture.append(frame) }
            try capture.commitAppended()
            #expect(capture.committedLength == Int64(8 << 18))

            let beside = try Pool.open(at: pool.path, systemCalls: calls)
            #expect(refusals.update { $0 } > 0, "the pool opened beside the capture never looked at its lock")
            #expect(beside.salvaged.isEmpty && beside.discarded.isEmpty)
            #expect(!FileManager.default.fileExists(atPath: destination), "the running capture was placed")
            let undecided = try beside.status().undecided ?? []
            #expect(undecided.map(\.id) == [capture.files.id], "\(undecided)")
            #expect(undecided.first?.reason.contains(Errno.description(refused)) == true, "\(undecided)")

            for frame in frames[8...] { try capture.append(frame) }
            let result = try capture.finish()
            #expect(result.path == destination)
            let whole = TestSupport.fileHolds(destination, frames.flatMap { $0 })
            #expect(whole, "the take is not its frames")
        }
    }
}

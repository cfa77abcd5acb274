import Foundation
import TestSupport
import Testing
@testable import ProVideoStorage
@testable import ProVideoWritePath

/// A finished capture's ring is the next capture's, zeroed: a take switch maps and faults in no
/// new memory (`RingMemory`), and no take starts with another's bytes.
struct RingMemoryTests {
    @Test func aFinishedCapturesRingIsTheNextCapturesAndStartsZeroed() throws {
        try TestSupport.withScratch { scratch in
            let pool = try Pool.create(at: scratch + "/pool", capacity: 64 << 20, measuringBandwidth: false)
            defer { try? pool.destroy() }
            var options = CaptureOptions(bitrate: 100_000_000)
            // 13 buffers of 1 MiB: a ring length no other test's captures have, so a capture
            // running beside this test does not take it.
            (options.writeSize, options.bufferBudget) = (1 << 20, 13 << 20)
            var first: UnsafeMutableRawPointer?
            do {
                let capture = try pool.startCapture(to: scratch + "/take-1.mov", options: options)
                first = capture.writer.memory.bytes.baseAddress
                #expect(capture.writer.memory.bytes.count == 13 << 20)
                try capture.append(TestSupport.pattern(5 << 20, seed: 3))
                _ = try capture.finish()
            }
            #expect(RingMemory.idleCount(length: 13 << 20) == 1)
            let second = try pool.startCapture(to: scratch + "/take-2.mov", options: options)
            #expect(second.writer.memory.bytes.baseAddress == first)
            #expect(RingMemory.idleCount(length: 13 << 20) == 0)
            let zeroed = second.writer.memory.bytes.allSatisfy { $0 == 0 }
            #expect(zeroed, "the first take's bytes are still in the ring")
            try second.append(TestSupport.pattern(1 << 20, seed: 4))
            _ = try second.finish()
            #expect(TestSupport.fileHolds(scratch + "/take-2.mov", TestSupport.pattern(1 << 20, seed: 4)))
            #expect(TestSupport.fileHolds(scratch + "/take-1.mov", TestSupport.pattern(5 << 20, seed: 3)))
        }
    }
}

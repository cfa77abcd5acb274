import Foundation
import Glibc
import Testing
@testable import ProVideoStorage
@testable import ProVideoWritePath

/// A broken rule of the write path's state fails one capture, never its host (issue 25, item
/// 6): each call that used to be a `precondition` (killing a multi-channel recorder with every
/// channel in it) throws `WritePathViolation`, which `Capture.guarded` turns into
/// `.invariantViolated`.
@Suite struct WritePathViolationTests {
    static func ring(_ memory: UnsafeMutableRawBufferPointer) throws -> BufferRing {
        try BufferRing(memory: memory, slotSize: 4096, alignment: 512)
    }

    @Test func aBufferRingOutOfStepThrows() throws {
        let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: 4 * 4096, alignment: 4096)
        defer { memory.deallocate() }
        #expect(throws: WritePathViolation.self) { try BufferRing(memory: memory, slotSize: 1000, alignment: 512) }
        var ring = try Self.ring(memory)
        #expect(throws: WritePathViolation.self) { try ring.nextPiece(upTo: 10) }
        #expect(throws: WritePathViolation.self) { try ring.didFill(10, frameEnd: nil) }
        #expect(throws: WritePathViolation.self) { try ring.beginFlush() }
        #expect(throws: WritePathViolation.self) { try ring.flushLanded(0, now: 0) }
        #expect(throws: WritePathViolation.self) { try ring.completeWrite(1, result: 4096, path: "/p") }
        try ring.startFilling(at: 0, limit: 1 << 20)
        #expect(throws: WritePathViolation.self) { try ring.startFilling(at: 0, limit: 1 << 20) }
        #expect(throws: WritePathViolation.self) { try ring.didFill(4097, frameEnd: nil) }
        #expect(try ring.nextPiece(upTo: 10).count == 10)
    }

    @Test func aCommitPipelineOutOfStepThrows() throws {
        var commits = CommitPipeline(interval: 0, now: 0)
        #expect(throws: WritePathViolation.self) { try commits.flushCompleted(512, alignment: 512, path: "/p") }
        #expect(throws: WritePathViolation.self) { try commits.syncCompleted(0, path: "/p") }
        #expect(throws: WritePathViolation.self) { try commits.recordCompleted(16, path: "/p") }
        #expect(throws: WritePathViolation.self) { try commits.startSync(candidate: 0, now: 0) }
        try commits.startSync(candidate: 100, now: 0)
        #expect(throws: WritePathViolation.self) { try commits.startFlush(slot: 0, length: 512, candidate: 200, now: 0) }
        #expect(try commits.syncCompleted(0, path: "/p") == 100)
    }

    /// A completion naming a buffer the capture does not have is refused, not an index past
    /// the end of the ring.
    @Test func aCompletionForAnUnknownBufferIsInvalid() {
        #expect(!CompletionTag.slotWrite(slot: 8).isValid(slots: 8))
        #expect(!CompletionTag.flush(slot: 100).isValid(slots: 8))
        #expect(CompletionTag.slotWrite(slot: 7).isValid(slots: 8))
        #expect(CompletionTag.dataSync.isValid(slots: 8))
    }
}

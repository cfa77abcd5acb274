import CProVideo
import Foundation
import Glibc
import TestSupport
import Testing
@testable import ProVideoStorage
@testable import ProVideoWritePath

/// Tests that notice a durability step removed, written for the mutations the suite had never
/// seen (issue 25; each is in Tools/mutation-check).
@Suite struct DurabilityStepTests {
    /// The capture's data is written with `O_DIRECT` (its pages never sit dirty in the page
    /// cache for a neighbour's fsync to flush), and so is its progress block.
    @Test func theCaptureWritesWithODirect() throws {
        try withPool { pool, scratch in
            let capture = try pool.startCapture(to: scratch + "/direct.mov", options: testOptions)
            for descriptor in [capture.writer.data, capture.writer.progress] {
                let flags = fcntl(descriptor.rawValue, F_GETFL)
                #expect(flags >= 0 && flags & pv_O_DIRECT != 0, "\(descriptor.path) is open without O_DIRECT")
            }
            try capture.cancel()
        }
    }

    /// A commit record whose check word does not match its length (garbage, or a write torn
    /// between its two words) is not believed: the other slot's record wins, and salvage keeps
    /// exactly the bytes that one committed.
    @Test(arguments: ["garbage", "torn"])
    func aBadCommitRecordLosesToTheOtherSlot(kind: String) throws {
        try withPool { pool, scratch in
            var options = testOptions
            options.durabilityInterval = 0
            var capture: Capture? = try pool.startCapture(to: scratch + "/salvaged.mov", options: options)
            let bytes = TestSupport.pattern(1 << 20, seed: 21)
            try capture!.append(bytes)
            for _ in 0..<500 where capture!.committedLength < Int64(bytes.count) {
                try capture!.poll()
                usleep(2_000)
            }
            let committed = capture!.committedLength
            try #require(committed > 0)
            let commitPath = capture!.files.commit
            // The slot that does not hold the committed record gets a record that claims more.
            let slots = CaptureJournal.commitSlots
            let file = try FileHandle(forUpdating: URL(fileURLWithPath: commitPath))
            defer { try? file.close() }
            func record(at slot: Int64) throws -> (UInt64, UInt64) {
                try file.seek(toOffset: UInt64(slot))
                let data = try #require(try file.read(upToCount: 16))
                let words = data.withUnsafeBytes { ($0.loadUnaligned(fromByteOffset: 0, as: UInt64.self),
                                                    $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self)) }
                return (UInt64(littleEndian: words.0), UInt64(littleEndian: words.1))
            }
            let other = try slots.first { try record(at: $0).0 != UInt64(committed) } ?? slots[1]
            let claimed = UInt64(committed) + 300_000
            let check = kind == "torn" ? UInt64(committed) ^ CaptureJournal.commitCheck : 0x0123_4567_89AB_CDEF
            var forged = Data()
            for word in [claimed.littleEndian, check.littleEndian] { withUnsafeBytes(of: word) { forged.append(contentsOf: $0) } }
            try file.seek(toOffset: UInt64(other))
            try file.write(contentsOf: forged)
            try file.synchronize()
            #expect(CaptureJournal.readCommitted(commitPath) == committed)
            capture = nil
            _ = try Pool.open(at: pool.path)
            let salvagedExactly = TestSupport.fileHolds(scratch + "/salvaged.mov", Array(bytes[..<Int(committed)]))
            #expect(salvagedExactly, "scratch + /salvaged.mov does not hold the expected bytes")
        }
    }

    /// The write path checks its own rules after every change: a capture whose state is broken
    /// on purpose (its length set below what already landed) fails with `.invariantViolated`
    /// at its next call, and the pool salvages it.
    @Test func aBrokenInvariantFailsTheCapture() throws {
        try withPool { pool, scratch in
            var capture: Capture? = try pool.startCapture(to: scratch + "/broken.mov", options: testOptions)
            try capture!.append(TestSupport.pattern(2 << 20, seed: 22))
            for _ in 0..<500 where capture!.writer.ring.landed == 0 {
                try capture!.poll()
                usleep(2_000)
            }
            try #require(capture!.writer.ring.landed > 0)
            capture!.writer.length = 0
            let error = #expect(throws: ProVideoError.self) { try capture!.poll() }
            #expect(error?.code == .invariantViolated, "\(String(describing: error))")
            #expect(error?.message.contains("past the recording's length") == true)
            capture = nil
            _ = try Pool.open(at: pool.path)
            #expect(try pool.busyReasons.isEmpty)
        }
    }

    /// A take waiting to land whose every chunk already landed (its publish failed) finds a
    /// file of its length but other bytes at its destination: that file is not taken for the
    /// landed take. It is left as it is, the take stays in the pool, and the landing says the
    /// destination exists (only a GlusterFS test noticed this before).
    @Test func aForeignFileAtTheDestinationIsNotTheLandedTake() throws {
        try withPool { pool, _ in
            try TestSupport.withScratchOnAnotherFilesystem { remote in
                let destination = remote + "/take.mov"
                let bytes = TestSupport.pattern(1 << 20, seed: 23)
                let held = try recordWaitingToLand(pool, to: destination, bytes)
                var calls = SystemCalls.live
                calls.renameNoReplace = { from, to in
                    TestSupport.resolved(to) == destination ? -EIO : SystemCalls.live.renameNoReplace(from, to)
                }
                calls.link = { from, to in TestSupport.resolved(to) == destination ? -EIO : SystemCalls.live.link(from, to) }
                let unpublished = try Pool.open(at: pool.path, systemCalls: calls).landPending()
                #expect(unpublished.map(\.landed) == [false])
                #expect(try pool.landings().first?.landedBytes == Int64(bytes.count), "the chunks did not all land")
                let foreign = TestSupport.pattern(bytes.count, seed: 24)
                try Data(foreign).write(to: URL(fileURLWithPath: destination))
                let again = try pool.landPending()
                #expect(again.map(\.landed) == [false])
                #expect(again.first?.error?.contains("already exists") == true, "\(again)")
                let foreignKept = TestSupport.fileHolds(destination, foreign)
                #expect(foreignKept, "destination does not hold the expected bytes")
                let takeKept = TestSupport.fileHolds(held, bytes)
                #expect(takeKept, "held does not hold the expected bytes")
            }
        }
    }
}

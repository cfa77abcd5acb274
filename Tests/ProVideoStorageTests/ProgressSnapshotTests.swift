import Foundation
import TestSupport
import Testing
@testable import ProVideoStorage

/// `status` reads a running capture's commit record and progress block as one snapshot: the
/// progress block is published at most every 250 ms and a commit can land in between, so the
/// files alone may say more committed than written; the snapshot never does.
@Suite struct ProgressSnapshotTests {
    private func withFiles(committed: Int64, published: Int64,
                           _ body: (_ commit: String, _ progress: String) throws -> Void) throws {
        try TestSupport.withScratch { scratch in
            var commit = [UInt8](repeating: 0, count: 1024)
            commit.withUnsafeMutableBytes { CaptureJournal.commitRecord(committed, into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<16])) }
            var progress = [UInt8](repeating: 0, count: 4096)
            withUnsafeBytes(of: UInt64(published).littleEndian) { progress.replaceSubrange(0..<8, with: $0) }
            try Data(commit).write(to: URL(fileURLWithPath: scratch + "/commit"))
            try Data(progress).write(to: URL(fileURLWithPath: scratch + "/progress"))
            try body(scratch + "/commit", scratch + "/progress")
        }
    }

    @Test func aCommitNewerThanThePublishedLengthCountsAsWritten() throws {
        try withFiles(committed: 12 << 20, published: 8 << 20) { commit, progress in
            let snapshot = CaptureJournal.snapshot(commit: commit, progress: progress)
            #expect(snapshot.committed == 12 << 20)
            #expect(snapshot.written == 12 << 20)
        }
    }

    @Test func aPublishedLengthAheadOfTheCommitIsKept() throws {
        try withFiles(committed: 8 << 20, published: 12 << 20) { commit, progress in
            let snapshot = CaptureJournal.snapshot(commit: commit, progress: progress)
            #expect(snapshot.committed == 8 << 20)
            #expect(snapshot.written == 12 << 20)
            #expect(snapshot.counters?.commits == 0)
        }
    }

    /// Files that are gone (a capture that ended since it was listed) read as nothing.
    @Test func missingFilesReadAsNothing() {
        let snapshot = CaptureJournal.snapshot(commit: "/nonexistent/commit", progress: "/nonexistent/progress")
        #expect(snapshot.written == 0 && snapshot.committed == 0 && snapshot.counters == nil && snapshot.unknown == nil)
    }

    /// A torn commit record or a garbled progress block is unknown, said so, never a silent 0:
    /// the figures read are floors (a status once showed "0 B committed" for a take whose
    /// record it could not read).
    @Test func unreadableRecordsAreUnknownNotZero() throws {
        try withFiles(committed: 12 << 20, published: 16 << 20) { commit, progress in
            let clean = CaptureJournal.snapshot(commit: commit, progress: progress)
            #expect(clean.unknown == nil && clean.committed == 12 << 20 && clean.written == 16 << 20)
            var garbled = try [UInt8](Data(contentsOf: URL(fileURLWithPath: commit)))
            garbled[3] ^= 0xFF
            try Data(garbled).write(to: URL(fileURLWithPath: commit))
            let torn = CaptureJournal.snapshot(commit: commit, progress: progress)
            #expect(torn.committed == 0 && torn.written == 16 << 20)
            #expect(torn.unknown?.contains("its commit record is torn") == true, "\(String(describing: torn.unknown))")
            try Data([1, 2, 3]).write(to: URL(fileURLWithPath: progress))
            let short = CaptureJournal.snapshot(commit: commit, progress: progress)
            #expect(short.written == 0)
            #expect(short.unknown?.contains("its progress block holds no length a capture could have written (3 bytes)") == true
                    && short.unknown?.contains("torn") == true, "\(String(describing: short.unknown))")
        }
    }
}

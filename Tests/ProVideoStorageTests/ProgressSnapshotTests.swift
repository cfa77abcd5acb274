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

    @Test func missingFilesReadAsNothing() {
        let snapshot = CaptureJournal.snapshot(commit: "/nonexistent/commit", progress: "/nonexistent/progress")
        #expect(snapshot.written == 0 && snapshot.committed == 0 && snapshot.counters == nil)
    }
}

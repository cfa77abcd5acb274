import Foundation
import TestSupport
import Testing
@testable import ProVideoStorage

/// What a `commit` file proves (`CaptureJournal.readCommitRecord`): the larger valid record of
/// a whole file; nothing at all from a file shorter than the pool made it, since the slot that
/// was cut away may have held the larger record (fuzz-state: a halved `commit` salvaged the
/// older, smaller length and discarded the rest of the take).
@Suite struct CommitRecordTests {
    static func file(records: [(slot: Int, length: Int64)], bytes: Int = CaptureJournal.commitFileLength) -> [UInt8] {
        var file = [UInt8](repeating: 0, count: bytes)
        file.withUnsafeMutableBytes { buffer in
            for (slot, length) in records where slot + CaptureJournal.commitRecordLength <= bytes {
                CaptureJournal.commitRecord(length, into: UnsafeMutableRawBufferPointer(
                    rebasing: buffer[slot..<slot + CaptureJournal.commitRecordLength]))
            }
        }
        return file
    }

    static func read(_ bytes: [UInt8]) throws -> CaptureJournal.CommitRecordState {
        try TestSupport.withScratch("commit-record") { scratch in
            try Data(bytes).write(to: URL(fileURLWithPath: scratch + "/commit"))
            return CaptureJournal.readCommitRecord(scratch + "/commit")
        }
    }

    @Test func aCutCommitFileProvesNothing() throws {
        let whole = Self.file(records: [(0, 40_960), (512, 81_920)])
        #expect(try Self.read(whole) == .length(81_920))
        #expect(try Self.read(Array(whole[..<512])) == .torn, "the cut slot held the larger record")
        #expect(try Self.read([]) == .torn)
        #expect(try Self.read(Self.file(records: [])) == .length(0), "fallocate's zeros: never committed")
        #expect(try Self.read(Self.file(records: [(0, 40_960)])) == .length(40_960))
    }
}

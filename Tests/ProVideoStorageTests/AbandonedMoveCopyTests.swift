import Foundation
import Glibc
import TestSupport
import Testing
@testable import ProVideoStorage

/// A cross-filesystem `moveHeldRecording` killed mid-copy leaves its temporary
/// (`RecordingCopy.temporaryPath`) beside the target, and the note's `movingTo` names a target
/// that does not exist. The pool removes that temporary when it finds such a note (opening it)
/// and when a move to another target starts; the killed copy is simulated by creating the
/// temporary and setting `movingTo`. The targets are on /dev/shm (tmpfs, another filesystem
/// than the pool's, writable without root).
@Suite struct AbandonedMoveCopyTests {
    /// A take kept in the pool (waiting to land at `landingDirectory`/take.mov), with a killed
    /// move toward `abandoned` simulated; `body` gets the pool, the held path, the temporary
    /// and the bytes of the take.
    private func withKilledMove(toward abandoned: @escaping (String) -> String,
                                _ body: (Pool, String, String, String, [UInt8], String) throws -> Void) throws {
        try TestSupport.withScratchOnAnotherFilesystem { directory in
            try withPool(capacity: 32 << 20) { pool, scratch in
                let bytes = TestSupport.pattern(3 << 20, seed: 11)
                let held = try recordWaitingToLand(pool, to: directory + "/take.mov", bytes)
                let target = abandoned(directory)
                let partial = RecordingCopy.temporaryPath(for: target, tag: FileSystem.lastComponent(of: held))
                try Data(bytes.prefix(1 << 20)).write(to: URL(fileURLWithPath: partial))
                try setMovingTo(target, note: held + ".json")
                try body(pool, held, target, partial, bytes, scratch)
            }
        }
    }

    private func setMovingTo(_ target: String, note: String) throws {
        var object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: note)))
                                  as? [String: Any])
        object["movingTo"] = target
        try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: note))
    }

    /// A held note's temporary is garbage only when no one may be writing it: opening the pool
    /// while another open file description holds `capturing` (a take finishing there writes its
    /// note as `<held>.json.tmp`, then renames it) leaves it; opened with no capture running,
    /// the pool removes it (a power cut between the write and the rename), and the note and
    /// the take stay as they were.
    @Test func aNotesTemporaryGoesOnlyWhenNoCaptureCouldBeWritingIt() throws {
        try TestSupport.withScratchOnAnotherFilesystem { directory in
            try withPool(capacity: 32 << 20) { pool, _ in
                let bytes = TestSupport.pattern(1 << 20, seed: 12)
                let held = try recordWaitingToLand(pool, to: directory + "/take.mov", bytes)
                let temporary = held + ".json.tmp"
                try Data("{\"half\":".utf8).write(to: URL(fileURLWithPath: temporary))
                let capturing = try PoolLock(path: pool.layout.lock, access: pool.access)
                #expect(try capturing.tryHoldShared(.capturing))
                _ = try Pool.open(at: pool.path)
                #expect(FileSystem.existsWithoutFollowing(temporary), "a live capture's note temporary was removed")
                capturing.release(.capturing)
                _ = try Pool.open(at: pool.path)
                #expect(!FileSystem.existsWithoutFollowing(temporary), "a dead writer's temporary stayed")
                let note = try #require(Pool.heldNote(held + ".json"))
                #expect(note.landing == true)
                #expect(TestSupport.fileHolds(held, bytes))
            }
        }
    }

    /// Opening the pool finds the note whose target does not exist: the temporary goes, the
    /// note forgets the move, and the take stays held, still waiting to land.
    @Test func openingThePoolRemovesTheTemporary() throws {
        try withKilledMove(toward: { $0 + "/elsewhere.mov" }) { pool, held, target, partial, bytes, _ in
            #expect(FileSystem.existsWithoutFollowing(partial))
            let reopened = try Pool.open(at: pool.path)
            #expect(!FileSystem.existsWithoutFollowing(partial), "the killed move's temporary stayed at \(partial)")
            #expect(!FileSystem.exists(target))
            let note = try #require(Pool.heldNote(held + ".json"))
            #expect(note.movingTo == nil)
            #expect(note.landing == true)
            #expect(TestSupport.fileHolds(held, bytes))
            #expect(try reopened.landings().map(\.path) == [held])
        }
    }

    /// A new move to another target removes the old target's temporary and lands the take at
    /// the new one; nothing is left beside either.
    @Test func aMoveToAnotherTargetRemovesTheTemporary() throws {
        try withKilledMove(toward: { $0 + "/first.mov" }) { pool, held, target, partial, bytes, _ in
            let directory = FileSystem.parent(of: target)
            let moved = try pool.moveHeldRecording(held, to: directory + "/second.mov")
            #expect(moved == directory + "/second.mov")
            #expect(TestSupport.fileHolds(moved, bytes))
            #expect(!FileSystem.existsWithoutFollowing(partial), "the killed move's temporary stayed at \(partial)")
            #expect(!FileSystem.exists(held) && !FileSystem.exists(held + ".json"))
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["second.mov"])
        }
    }

    /// A symbolic link where the temporary would be is removed itself, never followed: the
    /// file it points to stays.
    @Test func aLinkInPlaceOfTheTemporaryIsNotFollowed() throws {
        try withKilledMove(toward: { $0 + "/elsewhere.mov" }) { pool, held, _, partial, _, scratch in
            let victim = scratch + "/victim"
            try Data("keep".utf8).write(to: URL(fileURLWithPath: victim))
            try FileManager.default.removeItem(atPath: partial)
            try FileManager.default.createSymbolicLink(atPath: partial, withDestinationPath: victim)
            _ = try Pool.open(at: pool.path)
            #expect(!FileSystem.existsWithoutFollowing(partial))
            #expect(TestSupport.readFile(victim) == Array("keep".utf8))
            #expect(try #require(Pool.heldNote(held + ".json")).movingTo == nil)
        }
    }

    /// System calls whose look at `path` fails with EIO, as a failing disk's or a root-squashed
    /// NFS mount's statx does.
    private static func unlookable(_ path: String) -> SystemCalls {
        var calls = SystemCalls.live
        calls.lookAt = { looked in looked == path ? -EIO : 0 }
        return calls
    }

    /// A killed move whose target cannot be looked at is left as it is (unknown, not absent):
    /// its temporary stays and its note keeps `movingTo`; once the target can be looked at, the
    /// next open forgets the move as it does one whose target is absent.
    @Test func aTargetThatCannotBeLookedAtLeavesTheMove() throws {
        try withKilledMove(toward: { $0 + "/elsewhere.mov" }) { pool, held, target, partial, bytes, _ in
            _ = try Pool.open(at: pool.path, systemCalls: Self.unlookable(target))
            #expect(FileSystem.existsWithoutFollowing(partial), "the move's temporary went on a look that failed")
            #expect(try #require(Pool.heldNote(held + ".json")).movingTo == target)
            _ = try Pool.open(at: pool.path)
            #expect(!FileSystem.existsWithoutFollowing(partial))
            #expect(try #require(Pool.heldNote(held + ".json")).movingTo == nil)
            #expect(TestSupport.fileHolds(held, bytes))
        }
    }

    /// A killed move whose copy reached its target, with the take in the pool that cannot be
    /// looked at: its note stays (read as absent, the note was removed and the take kept no
    /// destination); once it can be looked at, the next open finds the copy whole and removes
    /// the take and its note.
    @Test func aTakeThatCannotBeLookedAtKeepsItsNote() throws {
        try withKilledMove(toward: { $0 + "/elsewhere.mov" }) { pool, held, target, partial, bytes, _ in
            try FileManager.default.removeItem(atPath: partial)
            try Data(bytes).write(to: URL(fileURLWithPath: target))
            _ = try Pool.open(at: pool.path, systemCalls: Self.unlookable(held))
            #expect(FileSystem.exists(held + ".json"), "the note of a take that could not be looked at was removed")
            #expect(try #require(Pool.heldNote(held + ".json")).movingTo == target)
            _ = try Pool.open(at: pool.path)
            #expect(!FileSystem.exists(held) && !FileSystem.exists(held + ".json"))
            #expect(TestSupport.fileHolds(target, bytes))
        }
    }
}

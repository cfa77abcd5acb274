import Foundation
import Glibc
import TestSupport
import Testing
@testable import ProVideoStorage

/// Legal destination names up to NAME_MAX (255 bytes): every name the pool derives from them
/// (a copy's temporary name, a held recording and its note, a recovered sibling) fits too, and
/// the pool stays usable (field report: a 250-byte name wedged it).
@Suite struct LongNameTests {
    /// 246 × "a" + ".mov": 250 bytes, legal.
    static let longName = String(repeating: "a", count: 246) + ".mov"

    /// System calls whose rename of the capture's data (or of a held recording) fails with
    /// EXDEV, so the move copies, as to another filesystem.
    static var copying: SystemCalls {
        var calls = SystemCalls.live
        calls.renameNoReplace = { rawFrom, rawTo in
            let from = TestSupport.resolved(rawFrom)
            return TestSupport.isCaptureData(from) || from.contains("/recordings/") ? -EXDEV : SystemCalls.live.renameNoReplace(rawFrom, rawTo)
        }
        return calls
    }

    @Test func derivedNamesFitNameMax() {
        for name in [Self.longName, String(repeating: "é", count: 127) + ".mov", String(repeating: "b", count: 255),
                     "x." + String(repeating: "e", count: 252), "take.mov"] {
            let recovered = FileSystem.lastComponent(of: RecordingPlacement.recoveredName("/d/" + name, id: "mk2x9q-1a2b3c"))
            #expect(recovered.utf8.count <= 255, "\(recovered.utf8.count) bytes")
            #expect(recovered.contains(".recovered-mk2x9q-1a2b3c"))
            #expect(DerivedName.shortened(name, toBytes: 100).utf8.count <= 100)
        }
        #expect(RecordingPlacement.recoveredName("/d/take.mov", id: "7") == "/d/take.recovered-7.mov")
        let a = DerivedName.shortened(String(repeating: "a", count: 200) + "1.mov", toBytes: 64)
        let b = DerivedName.shortened(String(repeating: "a", count: 200) + "2.mov", toBytes: 64)
        #expect(a != b && a.hasSuffix(".mov") && b.hasSuffix(".mov"))
    }

    /// For every destination name length from 1 to 255 bytes (ASCII with and without an
    /// extension, and two-byte characters), every name the pool derives fits NAME_MAX with
    /// every suffix it will ever add (issue 25, item 12: `<held>.landing.tmp` did not).
    @Test func everyDerivedNameOfEveryLengthFits() {
        let id = "mk2x9q0a-1a2b3c4d"
        for length in 1...255 {
            let names = [String(repeating: "a", count: length),
                         length > 4 ? String(repeating: "a", count: length - 4) + ".mov" : nil,
                         length % 2 == 0 ? String(repeating: "é", count: length / 2) : nil].compactMap { $0 }
            for name in names {
                let held = RecordingPlacement.heldName(id: id, destination: "/d/" + name)
                for companion in [held] + HeldRecording.companions(of: held) {
                    #expect(companion.utf8.count <= DerivedName.maximumBytes, "\(length): \(companion.utf8.count) bytes")
                }
                let recovered = FileSystem.lastComponent(of: RecordingPlacement.recoveredName("/d/" + name, id: id))
                #expect(recovered.utf8.count <= DerivedName.maximumBytes, "\(length): \(recovered.utf8.count) bytes")
                for tag in [id, held] {
                    let temporary = RecordingCopy.temporaryName(for: name, tag: tag)
                    #expect(temporary.utf8.count <= DerivedName.maximumBytes, "\(length): \(temporary.utf8.count) bytes")
                }
            }
        }
    }

    /// A take waiting to land at a 250-byte name whose landing fails (its directory is gone)
    /// records the failure beside it: `landings()` shows the attempt and the error, and the
    /// back-off holds the next pass (it recorded nothing and copied again at every pass).
    @Test func aLongNamesFailedLandingIsRecordedAndBacksOff() throws {
        try withPool { pool, _ in
            try TestSupport.withScratchOnAnotherFilesystem { remote in
                try FileManager.default.createDirectory(atPath: remote + "/out", withIntermediateDirectories: false)
                _ = try recordWaitingToLand(pool, to: remote + "/out/" + Self.longName, [1, 2, 3])
                try FileManager.default.removeItem(atPath: remote + "/out")
                #expect(try pool.landPending(dueOnly: true).map(\.landed) == [false])
                let waiting = try #require(try pool.landings().first)
                #expect(waiting.attempts == 1)
                #expect(waiting.lastError != nil, "\(waiting)")
                #expect(try pool.landPending(dueOnly: true).isEmpty, "the back-off did not hold the next pass")
            }
        }
    }

    /// A failure whose record cannot be saved (every flush of a landing record fails) is
    /// reported as such, and this process still backs off.
    @Test func aFailureThatCannotBeRecordedIsReportedAndBacksOff() throws {
        var calls = SystemCalls.live
        calls.fsync = { fd in TestSupport.path(of: fd).contains(".landing") ? -EIO : SystemCalls.live.fsync(fd) }
        try withPool(calls: calls) { pool, _ in
            try TestSupport.withScratchOnAnotherFilesystem { remote in
                try FileManager.default.createDirectory(atPath: remote + "/out", withIntermediateDirectories: false)
                _ = try recordWaitingToLand(pool, to: remote + "/out/take.mov", [1, 2, 3])
                try FileManager.default.removeItem(atPath: remote + "/out")
                let first = try pool.landPending(dueOnly: true)
                #expect(first.count == 1)
                #expect(first.first?.error?.contains("could not be recorded beside the take") == true, "\(first)")
                #expect(try pool.landPending(dueOnly: true).isEmpty, "no back-off after an unrecorded failure")
            }
        }
    }

    /// A 250-byte destination reached by a copy lands under its own name, with no temporary
    /// file left beside it.
    @Test func longDestinationLandsByCopy() throws {
        try TestSupport.withScratch("longname-copy") { scratch in
            let pool = try Pool.create(at: scratch + "/pool", capacity: 32 << 20, systemCalls: Self.copying)
            defer { try? pool.destroy() }
            let out = scratch + "/out"
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
            let capture = try pool.startCapture(to: out + "/" + Self.longName, options: testOptions)
            let frame = TestSupport.pattern(700_001, seed: 1)
            try capture.append(frame)
            let result = try capture.finish()
            #expect(result.path == out + "/" + Self.longName)
            #expect(TestSupport.fileHolds(result.path, frame))
            #expect(try FileManager.default.contentsOfDirectory(atPath: out) == [Self.longName])
            #expect(try pool.check() == [])
        }
    }

    /// A 250-byte destination that is taken at finish: the recording is held in the pool under
    /// a name that fits (with its note), `list` and `check` work, `move` copies it to another
    /// long name, and the next capture starts.
    @Test func longDestinationIsHeldAndMovedOn() throws {
        try TestSupport.withScratch("longname-held") { scratch in
            let pool = try Pool.create(at: scratch + "/pool", capacity: 32 << 20, systemCalls: Self.copying)
            defer { try? pool.destroy() }
            let destination = scratch + "/" + Self.longName
            let capture = try pool.startCapture(to: destination, options: testOptions)
            let frame = TestSupport.pattern(300_007, seed: 2)
            try capture.append(frame)
            #expect(FileManager.default.createFile(atPath: destination, contents: Data("taken".utf8)))
            let error = #expect(throws: ProVideoError.self) { try capture.finish() }
            #expect(error?.code == .destinationExists)
            let held = try #require(try pool.listing().recordings.first)
            #expect(FileSystem.lastComponent(of: held.path).utf8.count + ".json.tmp".utf8.count <= 255)
            #expect(held.destination == destination)
            #expect(TestSupport.fileHolds(held.path, frame))
            #expect(try pool.check() == [])
            let other = scratch + "/" + String(repeating: "b", count: 246) + ".mov"
            #expect(try pool.moveHeldRecording(held.path, to: other) == other)
            #expect(TestSupport.fileHolds(other, frame))
            #expect(try pool.listing().recordings.isEmpty)
            let next = try pool.startCapture(to: scratch + "/next.mov", options: testOptions)
            try next.cancel()
            #expect(try pool.check() == [])
        }
    }
}

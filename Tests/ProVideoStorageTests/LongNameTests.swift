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
            let recovered = FileSystem.lastComponent(of: Pool.recoveredName("/d/" + name, id: "mk2x9q-1a2b3c"))
            #expect(recovered.utf8.count <= 255, "\(recovered.utf8.count) bytes")
            #expect(recovered.contains(".recovered-mk2x9q-1a2b3c"))
            #expect(DerivedName.shortened(name, toBytes: 100).utf8.count <= 100)
        }
        #expect(Pool.recoveredName("/d/take.mov", id: "7") == "/d/take.recovered-7.mov")
        let a = DerivedName.shortened(String(repeating: "a", count: 200) + "1.mov", toBytes: 64)
        let b = DerivedName.shortened(String(repeating: "a", count: 200) + "2.mov", toBytes: 64)
        #expect(a != b && a.hasSuffix(".mov") && b.hasSuffix(".mov"))
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

import Foundation
import Glibc
import TestSupport
import Testing
@testable import ProVideoStorage

/// A missing file is reported as that file missing, never as a missing pool (field report: a
/// destination directory removed during a copy was reported as "no pool").
@Suite struct MissingFileTests {
    @Test func destinationDirectoryRemovedDuringACopy() throws {
        try TestSupport.withScratch("missing-during-copy") { scratch in
            let out = scratch + "/out"
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
            var calls = SystemCalls.live
            calls.renameNoReplace = { rawFrom, rawTo in
            let from = TestSupport.resolved(rawFrom)
                return TestSupport.isCaptureData(from) ? -EXDEV : SystemCalls.live.renameNoReplace(rawFrom, rawTo)
            }
            calls.copyFileRange = { fdIn, offsetIn, fdOut, offsetOut, length in
                try? FileManager.default.removeItem(atPath: out)  // the copy's directory goes away
                return SystemCalls.live.copyFileRange(fdIn, offsetIn, fdOut, offsetOut, length)
            }
            let pool = try Pool.create(at: scratch + "/pool", capacity: 32 << 20, systemCalls: calls)
            defer { try? pool.destroy() }
            let capture = try pool.startCapture(to: out + "/take.mov", options: testOptions)
            let frame = TestSupport.pattern(400_009, seed: 3)
            try capture.append(frame)
            let error = #expect(throws: ProVideoError.self) { try capture.finish() }
            #expect(error?.code != .poolNotFound, "\(String(describing: error))")
            #expect(error?.message.contains("no pool") == false)
            #expect(error?.errno == ENOENT)
            let held = try #require(try pool.listing().recordings.first)
            #expect(TestSupport.fileHolds(held.path, frame))
            #expect(try pool.check() == [])
            try FileSystem.remove(held.path)
            try FileSystem.remove(held.path + ".json")
        }
    }
}

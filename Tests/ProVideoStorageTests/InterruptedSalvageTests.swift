import Foundation
import Glibc
import TestSupport
import Testing
@testable import ProVideoStorage

/// A salvage killed between renaming the recording to its recovered sibling (the destination
/// was taken) and saving its journal: the next salvage reports the sibling, never the
/// pre-existing file at the destination.
@Suite struct InterruptedSalvageTests {
    @Test func salvageKilledAfterTheSiblingRenameReportsTheSibling() throws {
        try TestSupport.withScratch("salvage-sibling") { scratch in
            let path = scratch + "/pool"
            _ = try Pool.create(at: path, capacity: 32 << 20, measuringBandwidth: false)
            defer { try? Pool.open(at: path).destroy() }
            let destination = scratch + "/take.mov"
            var options = testOptions
            options.durabilityInterval = 0
            var capture: Capture? = try Pool.open(at: path).startCapture(to: destination, options: options)
            let frame = TestSupport.pattern(200_003, seed: 8)
            try capture!.append(frame)
            for _ in 0..<500 where capture!.committedLength < Int64(frame.count) {
                try capture!.poll()
                usleep(5_000)
            }
            #expect(capture!.committedLength == Int64(frame.count))
            let journal = try CaptureJournal.load(TestSupport.onlyCapture(path) + "/capture.json")
            capture = nil  // the recorder dies: its lock goes with it
            // The state a salvage leaves when killed right after its rename to the sibling.
            #expect(FileManager.default.createFile(atPath: destination, contents: Data("someone else's".utf8)))
            let sibling = RecordingPlacement.recoveredName(destination, id: journal.id)
            // Sealed to its length before the rename, as `RecordingPlacement.place` does.
            #expect(truncate(TestSupport.onlyCapture(path) + "/data", off_t(frame.count)) == 0)
            try FileSystem.rename(TestSupport.onlyCapture(path) + "/data", sibling)
            let reopened = try Pool.open(at: path)
            let salvaged = try #require(reopened.salvaged.first)
            #expect(salvaged.path == sibling)
            #expect(try reopened.listing().recovered.last?.path == sibling)
            #expect(TestSupport.readFile(destination) == Array("someone else's".utf8))
            #expect(try reopened.check() == [])
        }
    }
}

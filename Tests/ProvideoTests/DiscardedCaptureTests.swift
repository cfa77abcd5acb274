import Foundation
import Glibc
import TestSupport
import Testing

/// A recorder killed before its first commit leaves nothing durable: the next command
/// discards the capture and says so, naming the destination (field report: it was deleted
/// with only "nothing to recover").
@Suite struct DiscardedCaptureTests {
    @Test func aDeadCaptureWithNothingCommittedIsReported() throws {
        try TestSupport.withScratch("discarded") { scratch in
            let pool = scratch + "/pool"
            try FS.createPool(pool, capacity: "16M")
            defer { FS.destroyQuietly(pool) }
            let destination = scratch + "/take.mov"
            let recorder = try TestSupport.start("provideo", ["--pool", pool, "record", destination, "--durability", "60"],
                                                 stdinPipe: true)
            let input = (recorder.standardInput as! Pipe).fileHandleForWriting
            try input.write(contentsOf: Data(TestSupport.pattern(300_000, seed: 3)))
            let deadline = Date().addingTimeInterval(10)
            while (try? TestSupport.poolStatus(pool).captures.first?.bytesWritten) ?? 0 == 0 && Date() < deadline { usleep(50_000) }
            kill(recorder.processIdentifier, SIGKILL)
            recorder.waitUntilExit()
            let result = try FS.provideo(pool, "recover")
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains("discarded the capture for \(destination)"), "\(result.stdout)")
            #expect(result.stdout.contains("none durable"))
            #expect(!FileManager.default.fileExists(atPath: destination))
            #expect(try TestSupport.poolStatus(pool).remainingCapacity == 16 << 20)
        }
    }
}

import Foundation
import Glibc
import TestSupport
import Testing

/// A running capture whose grant cannot be counted (its directory closed to the pool's group by
/// its own recorder) holds an unknown share of the pool, not none: the pool owner's `replenish`
/// refuses, naming the file, and the reserve keeps its size. Counted as 0, it grew the reserve
/// into that capture's grant, a capacity the disk does not have (issue 37, "numbers still
/// trusted": accounting acts on proof).
@Suite(.serialized, .enabled(if: TestSupport.isRoot, "needs root: users and groups"))
struct UncountableGrantTests {
    typealias Users = AccessTests

    @Test func aReplenishBesideAnUncountableGrantGrowsNothing() throws {
        try TrustBoundaryTests.withWorld { world in
            let recorder = try TestSupport.start("/usr/bin/setpriv", [
                "--reuid=\(Users.recorder)", "--regid=\(Users.recorder)", "--init-groups", world.binary,
                "--pool", world.pool, "record", world.out + "/take.mov", "--bitrate", "100M", "--durability", "0.2",
            ], stdinPipe: true)
            let input = TestSupport.pattern(3 << 20, seed: 41)
            let feed = (recorder.standardInput as! Pipe).fileHandleForWriting
            defer { if recorder.isRunning { kill(recorder.processIdentifier, SIGKILL); recorder.waitUntilExit() } }
            try feed.write(contentsOf: Data(input[..<(1 << 20)]))
            var captures: [String] = []
            for _ in 0..<600 where captures.isEmpty {
                captures = (try? FileManager.default.contentsOfDirectory(atPath: world.pool + "/captures")) ?? []
                usleep(50_000)
            }
            let id = try #require(captures.first, "the recorder never started its capture")
            // Its grant is counted once it has one past its start.
            var granted: UInt64 = 0
            for _ in 0..<600 where granted == 0 {
                granted = (try? FileManager.default.attributesOfItem(atPath: world.pool + "/captures/\(id)/data")[.size] as? UInt64) ?? 0
                usleep(50_000)
            }
            try #require(granted > 0, "the capture was never granted")
            let closed = try Users.provideo(as: Users.recorder, "/bin/chmod", ["700", world.pool + "/captures/" + id])
            try #require(closed.status == 0, "\(closed)")
            let reserveBefore = try FileManager.default.attributesOfItem(atPath: world.pool + "/reserve")[.size] as? UInt64

            let replenish = try Users.provideo(as: Users.admin, world.binary, ["--pool", world.pool, "replenish"])
            #expect(replenish.status == 1, "replenish beside an uncountable grant: \(replenish)")
            #expect(replenish.stderr.contains("captures/\(id)/data"), "\(replenish.stderr)")
            let reserveAfter = try FileManager.default.attributesOfItem(atPath: world.pool + "/reserve")[.size] as? UInt64
            #expect(reserveAfter == reserveBefore, "the reserve grew into the running capture's grant")

            try feed.write(contentsOf: Data(input[(1 << 20)...]))
            try feed.close()
            #expect(TestSupport.wait(recorder) && recorder.terminationStatus == 0)
            let whole = TestSupport.fileHolds(world.out + "/take.mov", input)
            #expect(whole, "the take is not its input")
            let check = try world.provideo("check")
            #expect(check.status == 0, "\(check)")
        }
    }
}

import Foundation
import Glibc
import TestSupport
import Testing
import ProVideoStorage

/// Takes landing on a real single-node GlusterFS volume mounted through FUSE (where renameat2
/// has no `RENAME_NOREPLACE`): recorded with `provideo record`, landed by `provideo land`,
/// byte-identical under the same name, never over an existing file. The pool lives on the
/// root filesystem; each test has its own volume (`GlusterVolume`).
@Suite(.serialized, .enabled(if: GlusterVolume.unavailableReason == nil,
                             Comment(rawValue: GlusterVolume.unavailableReason ?? "")))
struct GlusterLandingTests {
    /// Runs `body` with a 64 MiB pool in a scratch directory and a `takes/` directory on a
    /// fresh GlusterFS volume.
    static func withPoolAndVolume(_ capacity: String = "64M", _ body: (String, String) throws -> Void) throws {
        try GlusterVolume.with { volume in
            try TestSupport.withScratch("glusterpool") { scratch in
                let pool = scratch + "/pool", takes = volume.mountPoint + "/takes"
                try FileManager.default.createDirectory(atPath: takes, withIntermediateDirectories: true)
                try FS.createPool(pool, capacity: capacity)
                defer { FS.destroyQuietly(pool) }
                try body(pool, takes)
            }
        }
    }

    @Test func aRecordedTakeLandsByteIdenticalUnderItsName() throws {
        try Self.withPoolAndVolume { pool, takes in
            let input = TestSupport.pattern(20_000_000, seed: 13)
            let destination = takes + "/take 1.mov"
            let record = try FS.provideo(pool, "record", destination, stdin: Data(input))
            try #require(record.status == 0, "\(record.stderr)")
            // FUSE is a network filesystem: `auto` lands it in the background.
            #expect(record.stdout.contains("landing at \(destination)"), "\(record.stdout)")
            #expect(!FileManager.default.fileExists(atPath: destination))
            let waiting = try TestSupport.poolStatus(pool)
            #expect(waiting.landing?.map(\.destination) == [destination])
            #expect(waiting.landingBytes == 20_000_000)
            #expect(waiting.remainingCapacity < waiting.initialCapacity - 19_000_000)

            let land = try FS.provideo(pool, "land")
            #expect(land.status == 0, "\(land.stderr)")
            #expect(land.stdout.contains("landed 19.1 MiB (20000000 bytes) at \(destination)"), "\(land.stdout)")
            let identical = TestSupport.fileHolds(destination, input)
            #expect(identical, "the landed take differs from the input")
            // Nothing else is left beside it (no temporary, no placeholder).
            #expect(CrashKit.contents(takes) == ["take 1.mov"])
            let after = try TestSupport.poolStatus(pool)
            #expect(after.landing == [])
            #expect(after.remainingCapacity == after.initialCapacity, "the space came back after the take landed")
            #expect(try TestSupport.poolListing(pool).recordings.isEmpty)
            #expect(try FS.provideo(pool, "check").status == 0)
        }
    }

    /// `--land finish` copies in `finish()`: published with link then unlink on GlusterFS.
    @Test func aTakeCopiedInFinishLands() throws {
        try Self.withPoolAndVolume { pool, takes in
            let input = TestSupport.pattern(5_000_000, seed: 3)
            let record = try FS.provideo(pool, "record", takes + "/take.mov", "--land", "finish", stdin: Data(input))
            #expect(record.status == 0, "\(record.stderr)")
            #expect(record.stdout.contains("copied to another filesystem and verified at \(takes)/take.mov"), "\(record.stdout)")
            let identical = TestSupport.fileHolds(takes + "/take.mov", input)
            #expect(identical)
            #expect(CrashKit.contents(takes) == ["take.mov"])
            #expect(try TestSupport.poolStatus(pool).remainingCapacity == 64 << 20)
        }
    }

    /// A file that took the destination's name while the take waited is never replaced, by
    /// `land` (background) or by `finish()` (a file made while recording): the take stays in
    /// the pool, and the failure is reported.
    @Test func anExistingDestinationIsNeverOverwritten() throws {
        try Self.withPoolAndVolume { pool, takes in
            let theirs = Array("an editor's cut".utf8)
            let background = takes + "/a.mov"
            #expect(try FS.provideo(pool, "record", background, stdin: Data(TestSupport.pattern(3_000_000, seed: 1))).status == 0)
            try Data(theirs).write(to: URL(fileURLWithPath: background))
            let land = try FS.provideo(pool, "land")
            #expect(land.status == 1)
            #expect(land.stderr.contains("already exists"), "\(land.stderr)")
            #expect(TestSupport.fileHolds(background, theirs))
            let progress = try #require(try TestSupport.poolListing(pool).landing?.first)
            #expect(progress.attempts == 1)
            #expect(progress.lastError?.contains("\(background) already exists") == true)

            let finished = takes + "/b.mov"
            let recorder = try TestSupport.start("provideo", ["--pool", pool, "record", finished, "--land", "finish"],
                                                 stdinPipe: true)
            let pipe = recorder.standardInput as! Pipe
            try pipe.fileHandleForWriting.write(contentsOf: Data(TestSupport.pattern(2_000_000, seed: 2)))
            try Data(theirs).write(to: URL(fileURLWithPath: finished))
            try pipe.fileHandleForWriting.close()
            let stderr = (recorder.standardError as! Pipe).fileHandleForReading.readDataToEndOfFile()
            recorder.waitUntilExit()
            #expect(recorder.terminationStatus == 1)
            #expect(String(decoding: stderr, as: UTF8.self).contains("was not overwritten"))
            #expect(TestSupport.fileHolds(finished, theirs))
            #expect(CrashKit.contents(takes) == ["a.mov", "b.mov"])
            #expect(try TestSupport.poolListing(pool).recordings.count == 2)
            #expect(try FS.provideo(pool, "check").status == 0)
        }
    }

    /// The fleet's rate shared on the volume (issue 69): two servers' landers, the slots file
    /// and both takes on it, write at most the fleet rate together, counted at the brick.
    @Test func twoLandersOnTheVolumeStayWithinTheFleetRate() throws {
        try GlusterVolume.with { volume in
            try FleetRateShareTests.landTwoWithinTheRate(store: volume.mountPoint + "/share",
                                                         measuredAt: volume.brick + "/share") { _ in
                volume.mountPoint + "/fleet.slots"
            }
        }
    }

    /// While `land` transfers (capped at 64 Mbit/s), `status --json` shows the bytes landed
    /// growing, the transfer, a rate and an ETA.
    @Test func statusShowsTheProgressOfATransfer() throws {
        try Self.withPoolAndVolume { pool, takes in
            let input = TestSupport.pattern(40 << 20, seed: 5)
            #expect(try FS.provideo(pool, "record", takes + "/slow.mov", stdin: Data(input)).status == 0)
            let lander = try TestSupport.start("provideo", ["--pool", pool, "land", "--rate", "64M"])
            var seen: [LandingProgress] = []
            let deadline = Date(timeIntervalSinceNow: 60)
            while lander.isRunning && Date() < deadline {
                if let progress = try TestSupport.poolStatus(pool).landing?.first, progress.transferring == true,
                   progress.landedBytes > 0 {
                    seen.append(progress)
                }
                usleep(300_000)
            }
            lander.waitUntilExit()
            #expect(lander.terminationStatus == 0)
            #expect(seen.count >= 2, "status showed the transfer \(seen.count) times")
            #expect(Set(seen.map(\.landedBytes)).count >= 2, "the bytes landed did not grow: \(seen.map(\.landedBytes))")
            // All of it landed while the copy is verified, before it is published.
            #expect(seen.allSatisfy { $0.length == 40 << 20 && $0.landedBytes <= 40 << 20 })
            #expect(seen.contains { $0.landedBytes < 40 << 20 })
            // 64 Mbit/s is 8 MB/s; a chunk's rate is measured, so allow for the disk's noise. How
            // slow it may be is the machine's (0.7 MB/s beside the stress CI): a rate, not a floor.
            #expect(seen.allSatisfy { ($0.bytesPerSecond ?? 0) > 0 && ($0.bytesPerSecond ?? 0) < 3e7 },
                    "\(seen.map { $0.bytesPerSecond ?? 0 })")
            #expect(seen.allSatisfy { ($0.etaSeconds ?? -1) >= 0 })
            let identical = TestSupport.fileHolds(takes + "/slow.mov", input)
            #expect(identical)
        }
    }

    /// The fleet's slots file on the GlusterFS volume (issue 43): the volume's locks
    /// translator keeps the OFD lock of one server's lander, and the other's waits for it.
    @Test func aFleetSlotOnTheVolumeLandsTheServersInTurn() throws {
        try GlusterVolume.with { volume in
            try FleetLandingTests.landInTurn { _ in volume.mountPoint + "/fleet.slots" }
        }
    }

    /// A lander killed while it holds the volume's only slot lets go of it with its process.
    @Test func aKilledHoldersSlotOnTheVolumeGoesToTheNextServer() throws {
        try GlusterVolume.with { volume in
            try FleetLandingTests.killTheHolder { _ in volume.mountPoint + "/fleet.slots" }
        }
    }
}

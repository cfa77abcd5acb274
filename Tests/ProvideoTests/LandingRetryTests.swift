import Foundation
import Glibc
import TestSupport
import Testing
import ProVideoStorage

/// A take landing on a second filesystem filled to the brim: `land --watch` fails, reports it
/// (`list --json`), retries with back-off, and lands the take once space is freed; the pool
/// keeps it meanwhile and nothing is lost.
@Suite(.serialized, .enabled(if: TestSupport.isRoot, "needs root: a loop filesystem"))
struct LandingRetryTests {
    @Test func aFullDestinationIsRetriedUntilSpaceIsFreed() throws {
        try LoopFilesystem.with("ext4", megabytes: 48, mkfsOptions: "-m 0") { fs in
            try TestSupport.withScratch { scratch in
                let pool = scratch + "/pool", destination = fs.mountPoint + "/take.mov"
                try FS.createPool(pool, capacity: "32M")
                defer { FS.destroyQuietly(pool) }
                try FS.fill(fs.mountPoint)
                let input = TestSupport.pattern(12 << 20, seed: 21)
                let record = try FS.provideo(pool, "record", destination, "--land", "background", stdin: Data(input))
                try #require(record.status == 0, "\(record.stderr)")

                let watcher = try TestSupport.start("provideo", ["--pool", pool, "land", "--watch", "--retry", "0.3",
                                                                 "--interval", "0.2"])
                defer { if watcher.isRunning { kill(watcher.processIdentifier, SIGKILL) } }
                var failing: LandingProgress?
                let deadline = Date(timeIntervalSinceNow: 60)
                while Date() < deadline {
                    if let progress = try TestSupport.poolListing(pool).landing?.first, progress.attempts >= 2 {
                        failing = progress
                        break
                    }
                    usleep(100_000)
                }
                let failed = try #require(failing, "the landing was not retried within 60 s")
                #expect(failed.lastError?.contains("No space left on device") == true, "\(failed.lastError ?? "")")
                #expect(failed.nextAttemptAt != nil)
                #expect(!FileManager.default.fileExists(atPath: destination))
                #expect(FileManager.default.fileExists(atPath: failed.path), "the pool's copy is gone")
                #expect(try FS.provideo(pool, "check").status == 0)

                try FileManager.default.removeItem(atPath: fs.mountPoint + "/filler")
                let landedBy = Date(timeIntervalSinceNow: 60)
                while Date() < landedBy, try TestSupport.poolListing(pool).landing?.isEmpty == false { usleep(100_000) }
                kill(watcher.processIdentifier, SIGTERM)
                watcher.waitUntilExit()
                #expect(watcher.terminationReason == .exit && watcher.terminationStatus == 0)
                let identical = TestSupport.fileHolds(destination, input)
                #expect(identical, "the landed take differs from the input")
                #expect(CrashKit.contents(fs.mountPoint).filter { !$0.hasPrefix("lost+found") } == ["take.mov"])
                let status = try TestSupport.poolStatus(pool)
                #expect(status.landing == [])
                #expect(status.remainingCapacity == status.initialCapacity)
                #expect(try FS.provideo(pool, "check").status == 0)
            }
        }
    }
}

import Foundation
import Glibc
import TestSupport
import Testing
@testable import ProVideoStorage

/// Recovery acts on proof (issue 37), through the real `provideo`: a killed capture whose
/// evidence cannot be read is kept and reported, never discarded, and nothing is reported
/// recovered that is not at its destination.
@Suite struct RecoveryOnProofTests {
    /// A killed capture with 300,007 committed bytes and an intact journal whose `commit` is
    /// replaced by something that cannot be read: `recover` keeps the take and says why; once
    /// the record is back, the take is salvaged whole. On the main before this rule, the take
    /// was discarded ("its recorder died before anything was committed").
    @Test(arguments: ["symlink", "fifo", "directory", "huge", "garbled"])
    func unreadableCommitRecordKeepsTheTake(_ kind: String) throws {
        let input = TestSupport.pattern(300_007, seed: 41)
        try PoolStateInputTests.withKilledCapture(input, name: "unreadable-commit-\(kind)") { dir, pool, capture in
            let commit = capture + "/commit", saved = dir + "/commit.saved"
            // Moved, not copied: the record back is the file the journal recorded (`commitIdentity`).
            try FileManager.default.moveItem(atPath: commit, toPath: saved)
            switch kind {
            case "symlink": try FileManager.default.createSymbolicLink(atPath: commit, withDestinationPath: saved)
            case "fifo": #expect(mkfifo(commit, 0o644) == 0)
            case "directory": try FileManager.default.createDirectory(atPath: commit, withIntermediateDirectories: false)
            case "huge":
                var bytes = TestSupport.readFile(saved)
                bytes += [UInt8](repeating: 0, count: 2 << 20)
                try Data(bytes).write(to: URL(fileURLWithPath: commit))
            default:
                // Both records garbled, as one torn 4 KiB sector of a 512e disk would leave them.
                try Data([UInt8](repeating: 0xa5, count: 1024)).write(to: URL(fileURLWithPath: commit))
            }
            let sizeBefore = try TestSupport.statSizes(capture + "/data").size
            let recover = try CrashKit.provideo(pool, ["recover"])
            #expect(recover.status == 1 && recover.stderr.contains("left as it is")
                    && recover.stderr.contains("nothing is discarded"), "recover: \(recover)")
            #expect(!recover.stdout.contains("discarded"), "recover: \(recover)")
            #expect(try TestSupport.statSizes(capture + "/data").size == sizeBefore, "the take's data was cut")
            #expect(!CrashKit.exists(dir + "/out/take.mov"))
            for command in [["status"], ["list"], ["check"]] {
                let outcome = try CrashKit.provideo(pool, command)
                #expect(outcome.reason == .exit, "\(command): \(outcome)")
            }
            // The evidence back: the take is salvaged whole.
            try TestSupport.shell("rm -rf '\(commit)' && mv '\(saved)' '\(commit)'")
            let again = try CrashKit.provideo(pool, ["recover"])
            #expect(again.status == 0, "recover: \(again)")
            #expect(TestSupport.fileEquals(dir + "/out/take.mov", input), "the committed bytes were not kept")
            #expect(try CrashKit.provideo(pool, ["check"]).status == 0)
        }
    }

    /// A running capture whose commit record cannot be read (both records garbled) shows its
    /// figures as floors and says why: `status` "at least … committed [progress unknown: its
    /// commit record is torn …]", `status --json` `progressUnknown`, and `metrics` leaves its
    /// written and committed gauges out, saying so. Before, all three showed "0 committed".
    @Test func aRunningCapturesUnreadableCommitIsShownAsUnknown() throws {
        try FS.withScratchPool(capacity: "32M") { dir, poolPath in
            let pool = try Pool.open(at: poolPath)
            // No commit comes while the test looks: its records stay as garbled as it leaves them.
            let capture = try pool.startCapture(to: dir + "/take.mov", options: CaptureOptions(
                bitrate: 50_000_000, durabilityInterval: 3_600_000_000_000))
            defer { try? capture.cancel() }
            try capture.append(TestSupport.pattern(1 << 20, seed: 44))
            let commit = try FileHandle(forWritingTo: URL(fileURLWithPath: TestSupport.onlyCapture(poolPath) + "/commit"))
            try commit.write(contentsOf: Data([UInt8](repeating: 0xa5, count: 1024)))
            try commit.close()
            let status = try CrashKit.provideo(poolPath, ["status"])
            #expect(status.status == 0 && status.stdout.contains("at least 0 B committed")
                    && status.stdout.contains("[progress unknown: its commit record is torn"), "\(status)")
            let json = try CrashKit.provideo(poolPath, ["status", "--json"])
            let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
            let running = (object?["captures"] as? [[String: Any]])?.first
            #expect((running?["progressUnknown"] as? String)?.contains("torn") == true, "\(json.stdout)")
            let metrics = try CrashKit.provideo(poolPath, ["metrics"])
            #expect(metrics.status == 0 && !metrics.stdout.contains("\nprovideo_capture_committed_bytes{")
                    && metrics.stdout.contains("# provideo_capture_committed_bytes of capture ")
                    && metrics.stdout.contains("\nprovideo_capture_declared_rate_bytes_per_second{"), "\(metrics.stdout)")
        }
    }

    /// `captures/<id>/data` removed: `recover` reports nothing recovered and logs nothing; on
    /// the main before this rule it printed "recovered 293.0 KiB … to DEST" with no DEST.
    @Test func missingDataIsNotReportedRecovered() throws {
        try PoolStateInputTests.withKilledCapture(TestSupport.pattern(300_001, seed: 43)) { dir, pool, capture in
            try FileManager.default.removeItem(atPath: capture + "/data")
            let recover = try CrashKit.provideo(pool, ["recover"])
            #expect(recover.status == 1 && !recover.stdout.contains("recovered")
                    && recover.stderr.contains("does not hold its committed bytes"), "recover: \(recover)")
            #expect(!CrashKit.exists(dir + "/out/take.mov"))
            #expect(try TestSupport.poolListing(pool).recovered.isEmpty)
            #expect(CrashKit.exists(capture + "/capture.json"), "the evidence was removed")
        }
    }

    /// A capture killed after its recording was renamed into place, before its journal said
    /// so: the place holds its committed length, and that is what is reported.
    @Test func renamedBeforeTheJournalIsReportedWhereItIs() throws {
        let input = TestSupport.pattern(300_003, seed: 47)
        try PoolStateInputTests.withKilledCapture(input) { dir, pool, capture in
            #expect(truncate(capture + "/data", off_t(input.count)) == 0)
            try FileSystem.rename(capture + "/data", dir + "/out/take.mov")
            let recover = try CrashKit.provideo(pool, ["recover"])
            #expect(recover.status == 0 && recover.stdout.contains("(300003 bytes) to \(dir)/out/take.mov"),
                    "recover: \(recover)")
            #expect(TestSupport.fileEquals(dir + "/out/take.mov", input))
            #expect(try TestSupport.poolListing(pool).recovered.map(\.length) == [Int64(input.count)])
            #expect(!TestSupport.hasCapture(pool))
        }
    }

    /// `provideo recover` while another process holds the pool's mutation lock waits for it,
    /// then salvages: a recover that skipped the salvage answered "nothing to recover" with a
    /// dead recorder's take in the pool (the library's rule, f1b1898, through the CLI). The lock
    /// is held until the recover has `pool.lock` open and 300 ms more; a recover that returned
    /// meanwhile did not wait. On a machine too slow to reach the lock in that time, the
    /// mutation may pass; the test never fails for it.
    @Test func recoverWaitsForAChangeOfThePoolInProgress() throws {
        let input = TestSupport.pattern(300_011, seed: 61)
        try PoolStateInputTests.withKilledCapture(input) { dir, pool, _ in
            let holder = try PoolLock(path: pool + "/pool.lock", access: try Pool.open(at: pool, salvaging: false).access)
            let process = try holder.withMutation { () throws -> Process in
                let process = try TestSupport.start("provideo", ["--pool", pool, "recover"])
                let lockFile = FileSystem.realPath(pool + "/pool.lock") ?? pool + "/pool.lock"
                let descriptors = "/proc/\(process.processIdentifier)/fd"
                func hasTheLockOpen() -> Bool {
                    ((try? FileManager.default.contentsOfDirectory(atPath: descriptors)) ?? []).contains {
                        (try? FileManager.default.destinationOfSymbolicLink(atPath: descriptors + "/" + $0)) == lockFile
                    }
                }
                let deadline = MonotonicTime.now() + 60_000_000_000
                while process.isRunning && !hasTheLockOpen() && MonotonicTime.now() < deadline { usleep(1_000) }
                TestSupport.sleep(nanoseconds: 300_000_000)
                #expect(process.isRunning, "recover returned while the pool's lock was held: it did not wait")
                return process
            }
            let out = (process.standardOutput as! Pipe).fileHandleForReading
            let err = (process.standardError as! Pipe).fileHandleForReading
            #expect(TestSupport.wait(process))
            let stdout = String(decoding: out.readDataToEndOfFile(), as: UTF8.self)
            let stderr = String(decoding: err.readDataToEndOfFile(), as: UTF8.self)
            try? out.close()
            try? err.close()
            #expect(process.terminationStatus == 0 && stdout.contains("(300011 bytes) to \(dir)/out/take.mov"),
                    "recover: exit \(process.terminationStatus); stdout: \(stdout); stderr: \(stderr)")
            let salvaged = TestSupport.fileEquals(dir + "/out/take.mov", input)
            #expect(salvaged, "the take was not salvaged whole")
        }
    }

    /// A held recording whose note cannot be read (garbled, or a directory in its place, then
    /// removed) is still held: `list` shows it and why, `land` says it did not land (not "nothing to
    /// land"), `check` names it, `destroy` refuses and leaves the pool whole, and `move` places
    /// it byte-identical. On the main before this rule the take vanished from every answer, and
    /// `destroy` removed the pool's reserve and `pool.json` before failing on `recordings/`.
    @Test(arguments: ["garbled", "directory"])
    func aHeldRecordingWhoseNoteCannotBeReadIsStillHeld(_ kind: String) throws {
        try FS.withScratchPool("held-note-\(kind)", capacity: "24M") { dir, pool in
            try FileManager.default.createDirectory(atPath: dir + "/out", withIntermediateDirectories: false)
            let frame = TestSupport.pattern(300_007, seed: 59)
            let held: String
            do {
                let opened = try Pool.open(at: pool)
                let capture = try opened.startCapture(to: dir + "/out/take.mov",
                                                      options: CaptureOptions(bitrate: 100_000_000, bufferBudget: 4 << 20,
                                                                              writeSize: 512 << 10))
                try capture.append(frame)
                // The destination taken meanwhile: the take is held in the pool (field case F8).
                #expect(FileManager.default.createFile(atPath: dir + "/out/take.mov", contents: Data("other".utf8)))
                #expect(throws: ProVideoError.self) { try capture.finish() }
                held = try #require(try opened.listing().recordings.first).path
            }
            try FileManager.default.removeItem(atPath: held + ".json")
            if kind == "garbled" {
                #expect(FileManager.default.createFile(atPath: held + ".json", contents: Data("{\"path\": 3".utf8)))
            } else {
                try FileManager.default.createDirectory(atPath: held + ".json", withIntermediateDirectories: false)
            }
            let listing = try TestSupport.poolListing(pool)
            let shown = try #require(listing.recordings.first, "the held recording vanished from `list`")
            #expect(listing.recordings.count == 1 && shown.path == held && shown.noteUnreadable == true
                    && shown.destination.isEmpty && shown.length == Int64(frame.count) && shown.reason.contains("cannot be read"),
                    "list: \(listing.recordings)")
            let land = try CrashKit.provideo(pool, ["land"])
            #expect(land.status == 1 && land.stderr.contains("did not land \(held)") && !land.stdout.contains("nothing to land"),
                    "land: \(land)")
            let check = try CrashKit.provideo(pool, ["check"])
            #expect(check.status == 1 && check.stdout.contains("its note"), "check: \(check)")
            let destroy = try CrashKit.provideo(pool, ["destroy"])
            #expect(destroy.status == 1 && destroy.stderr.contains("still holds 1 recording"), "destroy: \(destroy)")
            #expect(CrashKit.exists(pool + "/pool.json") && CrashKit.exists(pool + "/reserve"), "destroy removed the pool")
            if kind == "directory" {
                // A directory where the note goes cannot take the move's note: refused, the take
                // held as it was. Removed, the note is missing, and the take is still held.
                let refused = try CrashKit.provideo(pool, ["move", held, dir + "/out/moved.mov"])
                let intact = TestSupport.fileEquals(held, frame)
                #expect(refused.status == 1 && intact && !CrashKit.exists(dir + "/out/moved.mov"), "move: \(refused)")
                try FileManager.default.removeItem(atPath: held + ".json")
                let noteless = try TestSupport.poolListing(pool).recordings
                #expect(noteless.map(\.path) == [held] && noteless.first?.reason.contains("is missing") == true,
                        "list: \(noteless)")
            }
            let move = try CrashKit.provideo(pool, ["move", held, dir + "/out/moved.mov"])
            let moved = TestSupport.fileEquals(dir + "/out/moved.mov", frame)
            #expect(move.status == 0 && moved, "move: \(move)")
            #expect(try TestSupport.poolListing(pool).recordings.isEmpty)
        }
    }

    /// `recordings/` that cannot be listed (a file in its place) is an error, never "nothing
    /// held": `list` and `destroy` exit 1 naming it, and `destroy` leaves the pool whole.
    @Test func unlistableRecordingsAreNotNothingHeld() throws {
        try FS.withScratchPool("held-unlistable", capacity: "16M") { _, pool in
            try TestSupport.shell("rm -rf '\(pool)/recordings' && touch '\(pool)/recordings'")
            for command in [["list"], ["destroy"]] {
                let outcome = try CrashKit.provideo(pool, command)
                #expect(outcome.reason == .exit && outcome.status == 1 && outcome.stderr.contains("cannot list \(pool)/recordings"),
                        "\(command): \(outcome)")
            }
            #expect(CrashKit.exists(pool + "/pool.json") && CrashKit.exists(pool + "/reserve"), "destroy removed the pool")
            try FileSystem.remove(pool + "/recordings")
        }
    }
}

/// A stray entry in `captures/` (a file, a link) is named, never a reason to refuse the pool
/// (issue 37: `touch captures/junk` made every `record`, `status`, `list`, `metrics` and
/// `check` exit 1), and refuses nothing: the library makes only directories there, so it is no
/// capture's (issue 63: a `record` on a pool with a bandwidth still needed `--force`).
@Suite struct StrayCaptureEntryTests {
    @Test(arguments: ["file", "symlink"])
    func aStrayEntryIsNamedAndRefusesNothing(_ kind: String) throws {
        try TestSupport.withScratch("stray-\(kind)") { dir in
            let pool = dir + "/pool"
            try FS.createPool(pool, capacity: "24M", options: ["--bandwidth", "1G"])
            defer { FS.destroyQuietly(pool) }
            try FileManager.default.createDirectory(atPath: dir + "/out", withIntermediateDirectories: false)
            try FileManager.default.createDirectory(atPath: pool + "/captures", withIntermediateDirectories: true)
            let junk = pool + "/captures/junk"
            if kind == "file" {
                #expect(FileManager.default.createFile(atPath: junk, contents: Data("x".utf8)))
            } else {
                try FileManager.default.createSymbolicLink(atPath: junk, withDestinationPath: "/etc")
            }
            let what = kind == "file" ? "a regular file" : "a symbolic link"
            for command in [["status"], ["list"], ["metrics"]] {
                let outcome = try CrashKit.provideo(pool, command)
                #expect(outcome.status == 0 && outcome.stderr.contains("captures/junk is \(what), not a capture"),
                        "\(command): \(outcome)")
            }
            let check = try CrashKit.provideo(pool, ["check"])
            #expect(check.status == 1 && check.stdout.contains("captures/junk is \(what), not a capture"), "check: \(check)")
            let recover = try CrashKit.provideo(pool, ["recover"])
            #expect(recover.status == 0, "recover: \(recover)")
            let input = TestSupport.pattern(200_001, seed: 53)
            let record = try CrashKit.provideo(pool, ["record", dir + "/out/a.mov", "--bitrate", "100M"], input: input)
            #expect(record.status == 0 && TestSupport.fileEquals(dir + "/out/a.mov", input), "record: \(record)")
            let replenish = try CrashKit.provideo(pool, ["replenish"])
            #expect(replenish.reason == .exit && !replenish.stderr.contains("junk"), "replenish: \(replenish)")
            #expect(try CapacityInvariant.read(pool).holds)
            #expect(FileSystem.existsWithoutFollowing(junk), "recovery removed the stray entry")
        }
    }
}

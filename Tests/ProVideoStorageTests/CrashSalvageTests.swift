import Foundation
import Glibc
import TestSupport
import Testing
@testable import ProVideoStorage

extension CrashTests {
    /// A recorder killed with SIGKILL after its input was committed, then salvaged by the next
    /// process to open the pool: to the destination; to a "recovered" sibling when the
    /// destination was taken meanwhile (never overwriting it); kept in the pool when the
    /// destination's directory is gone (and moved out later); and again after the salvage
    /// itself is killed at each of its steps.
    @Suite struct Salvage {
        static let capacity: Int64 = 16 << 20

        @Test(arguments: ["reportedByStatus", "twoRecoversAtOnce", "destinationTaken", "destinationUnreachable",
                          "salvageKilledAt:finish.placed", "salvageKilledAt:finish.reserveRebuilt"])
        func killedRecorderIsSalvaged(_ variant: String) throws {
            try TestSupport.withScratch("crash-salvage") { dir in
                let pool = dir + "/pool"
                try CrashKit.createPool(pool, capacity: "16M")
                defer { _ = try? CrashKit.provideo(pool, ["destroy"]) }
                let outside = dir + "/out"
                try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: false)
                let destination = outside + "/take.mov"
                let input = TestSupport.pattern(2 << 20 + 12_345, seed: 99)
                try CrashKit.killRecorderAfterCommit(pool, destination, input)

                let unit = CrashKit.unit
                let holding = Self.capacity - TestSupport.roundUp(Int64(input.count), unit)
                switch variant {
                case "reportedByStatus":
                    // status only looks: it reports the dead capture and moves nothing (a root
                    // monitoring job never places takes); recover places it.
                    let looked = try CrashKit.provideo(pool, ["status"])
                    #expect(looked.status == 0 && looked.stderr.contains("wait to be salvaged"), "status: \(looked)")
                    #expect(!CrashKit.exists(destination), "status placed the recording")
                    #expect(TestSupport.hasCapture(pool), "status salvaged the capture")
                    let status = try CrashKit.status(pool)
                    #expect(status.busyReasons.isEmpty && status.captures.isEmpty)
                    #expect(try CrashKit.provideo(pool, ["recover"]).status == 0)
                    #expect(TestSupport.fileEquals(destination, input), "recover did not salvage the recording")
                    let sane = try CrashKit.expectSane(pool, variant)
                    #expect(sane.remainingCapacity == holding)

                case "twoRecoversAtOnce":
                    // Exactly one of two processes salvages it; the other finds nothing to do.
                    let both = [try TestSupport.start("provideo", ["--pool", pool, "recover"]),
                                try TestSupport.start("provideo", ["--pool", pool, "recover"])]
                    var outputs: [String] = []
                    for process in both {
                        let out = String(decoding: (process.standardOutput as! Pipe).fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                        #expect(TestSupport.wait(process) && process.terminationStatus == 0, "recover: \(out)")
                        outputs.append(out)
                    }
                    #expect(outputs.filter { $0.contains("(\(input.count) bytes) to \(destination)") }.count == 1,
                            "\(outputs)")
                    #expect(outputs.filter { $0.contains("nothing to recover") }.count == 1, "\(outputs)")
                    #expect(TestSupport.fileEquals(destination, input))
                    #expect(CrashKit.contents(outside) == ["take.mov"])
                    let sane = try CrashKit.expectSane(pool, variant)
                    #expect(sane.remainingCapacity == holding)

                case "destinationTaken":
                    let existing = Array("someone else's file\n".utf8)
                    try Data(existing).write(to: URL(fileURLWithPath: destination))
                    let recover = try CrashKit.provideo(pool, ["recover"])
                    #expect(recover.status == 0, "recover: \(recover)")
                    #expect(TestSupport.fileEquals(destination, existing), "the existing destination was overwritten")
                    let siblings = CrashKit.contents(outside).filter { $0.hasPrefix("take.recovered-") && $0.hasSuffix(".mov") }
                    #expect(siblings.count == 1, "beside the destination: \(CrashKit.contents(outside))")
                    if let sibling = siblings.first {
                        #expect(TestSupport.fileEquals(outside + "/" + sibling, input))
                        #expect(recover.stdout.contains(outside + "/" + sibling), "recover does not say where: \(recover.stdout)")
                    }
                    #expect(CrashKit.contents(outside).count == 2, "\(CrashKit.contents(outside))")
                    let sane = try CrashKit.expectSane(pool, variant)
                    #expect(sane.remainingCapacity == holding)

                case "destinationUnreachable":
                    try FileManager.default.removeItem(atPath: outside)
                    let recover = try CrashKit.provideo(pool, ["recover"])
                    #expect(recover.status == 0, "recover: \(recover)")
                    let listing = try TestSupport.poolListing(pool)
                    #expect(listing.recordings.count == 1)
                    let held = try #require(listing.recordings.first)
                    #expect(held.path.hasPrefix(pool + "/recordings/") && held.destination == destination
                            && held.length == Int64(input.count), "\(held)")
                    #expect(TestSupport.fileEquals(held.path, input))
                    #expect(recover.stdout.contains(held.path), "recover does not say where: \(recover.stdout)")
                    let sane = try CrashKit.expectSane(pool, variant)
                    #expect(sane.remainingCapacity == holding)
                    // Refused while held: destroy never deletes a recording.
                    let destroy = try CrashKit.provideo(pool, ["destroy"])
                    #expect(destroy.status == 1 && TestSupport.fileEquals(held.path, input), "destroy with a held recording: \(destroy)")
                    try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: false)
                    let move = try CrashKit.provideo(pool, ["move", held.path])
                    #expect(move.status == 0, "move: \(move)")
                    #expect(TestSupport.fileEquals(destination, input))
                    #expect(try TestSupport.poolListing(pool).recordings.isEmpty)
                    #expect(try CrashKit.provideo(pool, ["replenish"]).status == 0)
                    #expect(try CrashKit.expectSane(pool, "after move").remainingCapacity == Self.capacity)

                default:
                    let point = String(variant.dropFirst("salvageKilledAt:".count))
                    let killed = try CrashKit.provideo(pool, ["recover"], environment: ["PROVIDEO_CRASH_AT": point])
                    #expect(killed.killedBySIGKILL, "the salvage was not killed at \(point): \(killed)")
                    #expect(!CrashKit.contents(outside).contains { $0 != "take.mov" }, "\(CrashKit.contents(outside))")
                    let recover = try CrashKit.provideo(pool, ["recover"])
                    #expect(recover.status == 0, "recover after a killed salvage: \(recover)")
                    #expect(TestSupport.fileEquals(destination, input), "the recording was lost or damaged by a killed salvage")
                    #expect(CrashKit.contents(outside) == ["take.mov"])
                    let sane = try CrashKit.expectSane(pool, variant)
                    #expect(sane.remainingCapacity == holding)
                }
            }
        }
    }
}

extension CrashTests {
    /// The salvage log keeps the newest entries that fit the room the headroom holds for it,
    /// so a pool salvaging for years never outgrows it.
    @Suite struct SalvageLog {
        @Test func keepsTheNewestEntriesThatFitItsRoom() throws {
            try withPool { pool, _ in
                let directory = "/media/" + String(repeating: "d", count: 100)
                for index in 0..<300 {
                    try pool.recoveredLog.append(SalvagedRecording(path: "\(directory)/take-\(index).mov", length: Int64(index),
                                                          salvagedAt: Double(index)))
                }
                let kept = try pool.recoveredRecordings()
                let size = try FileSystem.facts(pool.layout.recoveredLog).size
                #expect(size <= UInt64(MetadataHeadroom.recoveredLogBytes), "\(size) bytes")
                #expect(kept.count >= 50 && kept.count < 300, "\(kept.count) entries")
                // The newest, in order, ending with the last one logged.
                #expect(kept.map(\.length) == Array(Int64(300 - kept.count)..<300))
            }
        }
    }
}

extension CrashTests {
    /// `move` of a held recording killed right after its rename (same filesystem) or right
    /// after the copy's final rename (another filesystem, EXDEV simulated through
    /// `SystemCalls`), before the pool forgot the recording. The next processes must not
    /// lose it, must not list a recording that is not there, and must let the move be retried
    /// to completion (and the pool destroyed afterwards).
    @Suite struct KilledMove {
        @Test(arguments: ["afterRename", "afterCopy"])
        func moveKilledHalfWay(_ variant: String) throws {
            guard let executable = CrashKit.testExecutable else {
                Issue.record("cannot find the test executable to run the move child in")
                return
            }
            try TestSupport.withScratch("crash-move") { dir in
                let pool = dir + "/pool"
                try CrashKit.createPool(pool, capacity: "16M")
                defer { _ = try? CrashKit.provideo(pool, ["destroy"]) }
                let outside = dir + "/out"
                let destination = outside + "/take.mov"
                // A held recording: its recorder was killed, and its destination's directory
                // vanished before the salvage.
                try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: false)
                let input = TestSupport.pattern(1 << 20 + 333, seed: 5)
                try CrashKit.killRecorderAfterCommit(pool, destination, input)
                try FileManager.default.removeItem(atPath: outside)
                _ = try CrashKit.provideo(pool, ["recover"])
                let recording = try #require(try TestSupport.poolListing(pool).recordings.first, "no held recording to move")
                try #require(TestSupport.fileEquals(recording.path, input))
                try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: false)

                let child = try CrashKit.run(executable, ["--testing-library", "swift-testing", "--filter", "moveKilledInChildProcess"],
                                             environment: ["PROVIDEO_CRASH_CHILD_POOL": pool,
                                                           "PROVIDEO_CRASH_CHILD_HELD": recording.path,
                                                           "PROVIDEO_CRASH_CHILD_VARIANT": variant])
                #expect(child.killedBySIGKILL, "the move child was not killed: \(child)")
                #expect(TestSupport.fileEquals(destination, input), "the recording is not at its destination after the kill")

                // The next command that repairs the pool finishes the killed move (check only looks).
                let recover = try CrashKit.provideo(pool, ["recover"])
                #expect(recover.status == 0, "recover after a killed move: \(recover)")
                let check = try CrashKit.provideo(pool, ["check"])
                #expect(check.status == 0, "check after a killed move: \(check)")
                let listed = try TestSupport.poolListing(pool).recordings
                for entry in listed {
                    #expect(CrashKit.exists(entry.path), "list shows \(entry.path), which does not exist")
                }
                // Retry what is still listed; afterwards the pool holds nothing.
                for entry in listed where CrashKit.exists(entry.path) {
                    let retry = try CrashKit.provideo(pool, ["move", entry.path])
                    #expect(retry.status == 0, "retrying the killed move: \(retry)")
                }
                #expect(try TestSupport.poolListing(pool).recordings.isEmpty, "the pool still lists a moved recording")
                #expect(TestSupport.fileEquals(destination, input))
                #expect(CrashKit.contents(outside) == ["take.mov"], "beside the destination: \(CrashKit.contents(outside))")
                #expect(try CrashKit.provideo(pool, ["replenish"]).status == 0)
                try CrashKit.expectSane(pool, "after a killed move")
                let destroy = try CrashKit.provideo(pool, ["destroy"])
                #expect(destroy.status == 0, "destroy after the move: \(destroy)")
                #expect(!CrashKit.exists(pool))
            }
        }
    }
}

/// Run only as the child of `KilledMove.moveKilledHalfWay` (skipped otherwise): moves the held
/// recording the parent names with system calls that SIGKILL this process right after the
/// rename that puts the recording at its destination.
@Suite("Child process of moveKilledHalfWay: skipped unless that test starts it")
struct ChildProcessOnlyMove {
    @Test(.enabled(if: ProcessInfo.processInfo.environment["PROVIDEO_CRASH_CHILD_HELD"] != nil,
                   "runs only as the child process of KilledMove.moveKilledHalfWay"))
    func moveKilledInChildProcess() throws {
        let environment = ProcessInfo.processInfo.environment
        let variant = environment["PROVIDEO_CRASH_CHILD_VARIANT"] ?? "afterRename"
        var calls = SystemCalls.live
        calls.renameNoReplace = { rawFrom, rawTo in
            let from = TestSupport.resolved(rawFrom)
            if variant == "afterCopy" && from.contains("/recordings/") { return -EXDEV }
            let rc = SystemCalls.live.renameNoReplace(rawFrom, rawTo)
            let final = variant == "afterCopy" ? from.hasSuffix(".partial") : from.contains("/recordings/")
            if rc == 0 && final { kill(getpid(), SIGKILL) }
            return rc
        }
        let poolPath: String = try #require(environment["PROVIDEO_CRASH_CHILD_POOL"])
        let pool = try Pool.open(at: poolPath, systemCalls: calls)
        _ = try pool.moveHeldRecording(try #require(environment["PROVIDEO_CRASH_CHILD_HELD"]))
        Issue.record("the move returned: the swapped rename did not kill the process")
    }
}

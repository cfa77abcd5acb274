import Foundation
import Glibc
import TestSupport
import Testing
@testable import ProVideoStorage

/// The pool's own files are input (issue 24): a corrupt, hostile or huge state file gives a
/// clear answer, never a trap, a hang, or a lost recording. Each case is one corruption of one
/// file, run through the CLI as a separate process (a trap would show as a signal).
@Suite struct PoolStateInputTests {
    /// A pool with a recorder killed after committing `input` to `dir/out/take.mov`.
    static func withKilledCapture(_ input: [UInt8], name: String = #function,
                                  _ body: (_ dir: String, _ pool: String, _ capture: String) throws -> Void) throws {
        try FS.withScratchPool("state-\(name)", capacity: "24M") { dir, pool in
            try FileManager.default.createDirectory(atPath: dir + "/out", withIntermediateDirectories: false)
            try CrashKit.killRecorderAfterCommit(pool, dir + "/out/take.mov", input)
            try body(dir, pool, TestSupport.onlyCapture(pool))
        }
    }

    static func expectAnswered(_ outcome: CrashKit.Outcome, _ context: String,
                               sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(outcome.reason == .exit && (outcome.status == 0 || (outcome.status == 1 && !outcome.stderr.isEmpty)),
                "\(context): \(outcome)", sourceLocation: sourceLocation)
    }

    /// Fault 1 and 5: a commit record claiming 2^63 bytes, or more than the pool could grant
    /// (64 MiB in a 24 MiB pool), traps nothing, and the salvage keeps what `data` holds: the
    /// file is never extended with zeros.
    @Test(arguments: [UInt64(1) << 63, UInt64.max, UInt64(64 << 20)])
    func commitRecordLongerThanTheData(_ claimed: UInt64) throws {
        let input = TestSupport.pattern(300_007, seed: 31)
        try Self.withKilledCapture(input) { dir, pool, capture in
            try CaptureJournalRecord.write(capture + "/commit", length: claimed)
            for command in [["status"], ["status", "--json"], ["list"], ["check"]] {
                Self.expectAnswered(try CrashKit.provideo(pool, command), "\(command) with a commit of \(claimed)")
            }
            let recover = try CrashKit.provideo(pool, ["recover"])
            #expect(recover.status == 0 && recover.stderr.contains("its commit record claims"), "recover: \(recover)")
            // The data file was granted whole steps: what it holds is the input, then the grant's
            // unwritten rest; the take is cut there, never extended.
            let kept = TestSupport.readFile(dir + "/out/take.mov")
            #expect(kept.count >= input.count && Int64(kept.count) < 1 << 40, "kept \(kept.count) bytes")
            #expect(Array(kept.prefix(input.count)) == input, "the committed input is not the take's start")
        }
    }

    /// Fault 2: a FIFO, a directory or a huge sparse file in place of a state file: every
    /// command answers (none blocks on the FIFO, none reads a terabyte).
    @Test(arguments: ["pool.json", "capture.json", "commit", "progress", "recovered.json"],
          ["fifo", "directory", "huge"])
    func stateFileThatIsNotASmallFile(_ file: String, _ kind: String) throws {
        try Self.withKilledCapture(TestSupport.pattern(100_003, seed: 2)) { _, pool, capture in
            let path = ["pool.json", "recovered.json"].contains(file) ? pool + "/" + file : capture + "/" + file
            let saved = path + ".saved"
            if FileManager.default.fileExists(atPath: path) { try FileManager.default.moveItem(atPath: path, toPath: saved) }
            switch kind {
            case "fifo": #expect(mkfifo(path, 0o660) == 0)
            case "directory": try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
            default: try TestSupport.shell("truncate -s 1T '\(path)'")
            }
            for command in [["status"], ["list"], ["check"], ["recover"], ["status", "--json"]] {
                let outcome = try CrashKit.run("provideo", ["--pool", pool] + command)
                Self.expectAnswered(outcome, "\(command) with \(file) a \(kind)")
            }
            try? FileManager.default.removeItem(atPath: path)
            if FileManager.default.fileExists(atPath: saved) { try FileManager.default.moveItem(atPath: saved, toPath: path) }
        }
    }

    /// Fault 3: a truncated journal beside an intact commit record: the committed bytes are
    /// kept and reported, and `recover --salvage-to` places them, whole.
    @Test func unreadableJournalKeepsTheCommittedBytes() throws {
        let input = TestSupport.pattern(400_009, seed: 17)
        try Self.withKilledCapture(input) { dir, pool, capture in
            let journal = try Data(contentsOf: URL(fileURLWithPath: capture + "/capture.json"))
            try journal.prefix(journal.count / 2).write(to: URL(fileURLWithPath: capture + "/capture.json"))
            let recover = try CrashKit.provideo(pool, ["recover"])
            #expect(recover.status == 1 && recover.stderr.contains("400009 committed bytes are kept")
                    && recover.stderr.contains("--salvage-to"), "recover: \(recover)")
            #expect(CrashKit.exists(capture + "/data"), "the committed data was thrown away")
            let placed = dir + "/placed"
            try FileManager.default.createDirectory(atPath: placed, withIntermediateDirectories: false)
            let salvage = try CrashKit.provideo(pool, ["recover", "--salvage-to", placed])
            #expect(salvage.status == 0, "recover --salvage-to: \(salvage)")
            let id = FileSystem.lastComponent(of: capture)
            #expect(TestSupport.fileEquals(placed + "/\(id).salvaged", input), "the salvaged take is not the input")
            #expect(!TestSupport.hasCapture(pool))
            #expect(try CrashKit.provideo(pool, ["check"]).status == 0)
        }
    }

    /// Fault 4: liveness fails closed. A capture whose `progress` cannot be opened for another
    /// reason than ENOENT (here a planted link: ELOOP) may still be written by its owner; no
    /// salvage cuts or moves it.
    @Test func unknownLivenessIsNeverSalvaged() throws {
        try Self.withKilledCapture(TestSupport.pattern(100_003, seed: 5)) { dir, pool, capture in
            try TestSupport.shell("cd '\(capture)' && mv progress progress.real && ln -s progress.real progress")
            let dataBefore = try TestSupport.statSizes(capture + "/data")
            let undecided = try CrashKit.provideo(pool, ["recover"])
            #expect(undecided.status == 0, "recover: \(undecided)")
            #expect(try TestSupport.statSizes(capture + "/data").size == dataBefore.size, "a salvage cut the capture")
            #expect(!CrashKit.exists(dir + "/out/take.mov"), "a salvage moved a capture whose owner may be alive")
            try TestSupport.shell("cd '\(capture)' && rm progress && mv progress.real progress")
            #expect(try CrashKit.provideo(pool, ["recover"]).status == 0)
            #expect(CrashKit.exists(dir + "/out/take.mov"))
        }
    }

    /// Fault 6: `captures/` that cannot be listed is an error that stops a replenish (it would
    /// grow the reserve into the grants it cannot see), not an empty list.
    @Test func unlistableCapturesStopTheReplenish() throws {
        try FS.withScratchPool("state-unlistable", capacity: "16M") { dir, pool in
            try FileManager.default.createDirectory(atPath: dir + "/out", withIntermediateDirectories: false)
            try CrashKit.killRecorderAfterCommit(pool, dir + "/out/take.mov", TestSupport.pattern(200_003, seed: 9))
            let reserve = try TestSupport.statSizes(pool + "/reserve").size
            try TestSupport.shell("mv '\(pool)/captures' '\(pool)/captures.away' && touch '\(pool)/captures'")
            let replenish = try CrashKit.provideo(pool, ["replenish"])
            #expect(replenish.reason == .exit && replenish.status == 1 && replenish.stderr.contains("cannot list"),
                    "replenish: \(replenish)")
            #expect(try TestSupport.statSizes(pool + "/reserve").size == reserve, "the reserve grew over unseen grants")
            try TestSupport.shell("rm '\(pool)/captures' && mv '\(pool)/captures.away' '\(pool)/captures'")
            #expect(try CrashKit.provideo(pool, ["recover"]).status == 0)
        }
    }

    /// Notes of takes waiting to land each claim the largest length a pool holds: their sum
    /// passes Int64, and `status` and `metrics` sum them (a member may write notes). They
    /// answer, the sum held at its bound; the trap that was there killed both for everyone.
    @Test func landingLengthsThatOverflowTheirSumAreHeld() throws {
        try FS.withScratchPool("state-landing-sum", capacity: "8M") { _, pool in
            let recordings = pool + "/recordings"
            try FileManager.default.createDirectory(atPath: recordings, withIntermediateDirectories: true)
            for name in ["a-1.mov", "b-2.mov"] {
                #expect(FileManager.default.createFile(atPath: recordings + "/" + name, contents: Data("x".utf8)))
                let note = #"{"path":"x","destination":"/nonexistent/\#(name)","length":\#(Pool.maximumCapacity),"#
                    + #""reason":"planted","landing":true}"#
                #expect(FileManager.default.createFile(atPath: recordings + "/" + name + ".json", contents: Data(note.utf8)))
            }
            for command in [["status", "--json"], ["metrics"]] {
                let outcome = try CrashKit.provideo(pool, command)
                #expect(outcome.reason == .exit && outcome.status == 0, "\(command): \(outcome)")
            }
            let status = try TestSupport.poolStatus(pool)
            #expect(status.landingBytes == Int64.max, "\(String(describing: status.landingBytes))")
            try TestSupport.shell("rm -rf '\(recordings)'/*")
        }
    }

    /// Fault 1 in pool.json: impossible numbers are a clear "corrupt" error naming the field.
    @Test(arguments: [("initialCapacity", "9223372036854775807"), ("blockSize", "4611686018427387904"),
                      ("memory", "0"), ("offset", "3"), ("maxCaptures", "-1")])
    func impossibleNumbersInPoolJSON(_ field: String, _ value: String) throws {
        try FS.withScratchPool("state-pooljson", capacity: "16M") { _, pool in
            let path = pool + "/pool.json"
            let text = try String(contentsOfFile: path, encoding: .utf8)
            let pattern = try NSRegularExpression(pattern: "\"\(field)\" : -?[0-9]+")
            var edited = pattern.stringByReplacingMatches(in: text, range: NSRange(text.startIndex..., in: text),
                                                          withTemplate: "\"\(field)\" : \(value)")
            if field == "maxCaptures" && !text.contains("\"maxCaptures\"") {
                edited = edited.replacingOccurrences(of: "\"format\"", with: "\"maxCaptures\" : \(value),\n  \"format\"")
            }
            try #require(edited != text, "the field \(field) is not in pool.json")
            try edited.write(toFile: path, atomically: false, encoding: .utf8)
            for command in [["status"], ["check"], ["recover"], ["replenish"]] {
                let outcome = try CrashKit.provideo(pool, command)
                #expect(outcome.reason == .exit && outcome.status == 1 && outcome.stderr.contains("corrupt")
                        && outcome.stderr.contains(field), "\(command) with \(field) = \(value): \(outcome)")
            }
            try text.write(toFile: path, atomically: false, encoding: .utf8)
        }
    }

    /// Fault 7: an impossible `--durability` is a usage error (exit 2), not a trap.
    @Test(arguments: ["inf", "1e400", "9223372036854775808", "nan", "-1", "99999999999999999999999999999999999999999"])
    func impossibleDurability(_ value: String) throws {
        try FS.withScratchPool("state-durability", capacity: "16M") { dir, pool in
            let outcome = try CrashKit.provideo(pool, ["record", dir + "/take.mov", "--durability", value],
                                                input: [1, 2, 3])
            #expect(outcome.reason == .exit && outcome.status == 2 && outcome.stderr.contains("--durability"),
                    "--durability \(value): \(outcome)")
        }
    }
}

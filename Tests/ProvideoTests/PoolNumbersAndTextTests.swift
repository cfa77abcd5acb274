import CProVideo
import CommandLineSupport
import Foundation
import Glibc
import TestSupport
import Testing
@testable import ProVideoStorage

/// Issue 37: numbers and text from the pool's files, which any pool member may write, reach
/// root's terminal only range-checked and escaped. Every case runs the real CLI as a separate
/// process (a trap shows as a signal) on a pool whose files the test crafted.
@Suite struct PoolNumbersAndTextTests {
    /// What JSON can hold where NaN cannot: out of range for every field, or just past one.
    static let hostileNumbers = ["1e300", "-1e300", "-0.0", "-1", "9223372036854775808", "18446744073709551616"]

    /// Text a member may write to drive root's terminal: clear the screen, retitle the window,
    /// return the cursor and overwrite the line, a C1 CSI. As a path it lies in the test's own
    /// scratch directory, under a directory that does not exist, so no take can land there
    /// (a fixed /tmp path was shared by every run, and a take placed there stayed).
    static func hostileText(in scratch: String) -> String {
        scratch + "/absent/evil\u{1B}[2J\u{1B}]0;owned\u{07}\rFAKE\u{9B}31m\\x"
    }
    /// `hostileText` as the human output shows it (the scratch path has no control character).
    static func hostileEscaped(in scratch: String) -> String {
        scratch + "/absent/evil\\x1b[2J\\x1b]0;owned\\a\\rFAKE\\u009b31m\\\\x"
    }

    /// The process ended with an exit (no signal): 0, or 1 with a message on standard error.
    static func expectAnswered(_ outcome: CrashKit.Outcome, _ context: String,
                               sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(outcome.reason == .exit && (outcome.status == 0 || (outcome.status == 1 && !outcome.stderr.isEmpty)),
                "\(context): \(outcome)", sourceLocation: sourceLocation)
    }

    /// No crazy number in what a command's human output printed: no exabytes, no exponent, no
    /// negative count. (An error may quote the value it refuses, and `--json` reports what the
    /// file holds: neither is checked here.)
    static func expectSaneNumbers(_ outcome: CrashKit.Outcome, _ context: String,
                                  sourceLocation: SourceLocation = #_sourceLocation) {
        guard outcome.status == 0, !context.contains("--json") else { return }
        // A warning quotes the value it refuses, as an error does.
        let text = outcome.stdout + outcome.stderr.split(separator: "\n").filter { !$0.hasPrefix("warning:") }.joined(separator: "\n")
        for crazy in ["EiB", "PiB", "e+", "-1 buffer", "-1 bytes", "-1 B ", "-1 overrun", "9223372036854775807"]
            where text.contains(crazy) {
            Issue.record("\(context): printed '\(crazy)': \(outcome)", sourceLocation: sourceLocation)
        }
    }

    /// No raw control character on either stream.
    static func expectNoControls(_ outcome: CrashKit.Outcome, _ context: String,
                                 sourceLocation: SourceLocation = #_sourceLocation) {
        let raw = (outcome.stdout + outcome.stderr).unicodeScalars.filter {
            // Newlines end lines and tabs separate `-H` fields: any other is the member's.
            ($0.value < 0x20 && $0 != "\n" && $0 != "\t") || (0x7F...0x9F).contains($0.value)
        }
        #expect(raw.isEmpty, "\(context): raw control characters \(raw.map { String($0.value, radix: 16) }): \(outcome)",
                sourceLocation: sourceLocation)
    }

    static func write(_ text: String, to path: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    /// Takes the OFD lock on byte 0 of `path` (as a capture holds its `progress`, or a lander
    /// its take) until `body` returns.
    static func holdingLock<T>(_ path: String, _ body: () throws -> T) throws -> T {
        let fd = open(path, O_RDWR)
        try #require(fd >= 0, "cannot open \(path): errno \(errno)")
        defer { close(fd) }
        try #require(pv_ofd_lock(fd, 0, 1, 0) == 0, "cannot lock \(path)")
        return try body()
    }

    /// `"field": NUMBER` replaced by `"field":literal` in a JSON text (one occurrence).
    static func replacingNumber(_ field: String, with literal: String, in text: String) throws -> String {
        let pattern = try NSRegularExpression(pattern: "\"\(field)\"\\s*:\\s*-?[0-9][0-9.eE+-]*")
        let range = NSRange(text.startIndex..., in: text)
        try #require(pattern.firstMatch(in: text, range: range) != nil, "no number \(field) in \(text)")
        return pattern.stringByReplacingMatches(in: text, range: range, withTemplate: "\"\(field)\":\(literal)")
    }

    // MARK: - a take waiting to land

    /// A take held in the pool to land at `destination` (note `landing: true`), 4096 bytes,
    /// with the landing record `record`; returns its path.
    @discardableResult
    static func plantLandingTake(_ pool: String, destination: String = "/nonexistent/take.mov", reason: String = "waiting",
                                 record: String) throws -> String {
        let recordings = pool + "/recordings"
        try FileManager.default.createDirectory(atPath: recordings, withIntermediateDirectories: true)
        let held = recordings + "/abc123-take.mov"
        try Data(repeating: 7, count: 4096).write(to: URL(fileURLWithPath: held))
        #expect(chmod(held, 0o640) == 0)
        let note: [String: Any] = ["path": held, "destination": destination, "length": 4096, "reason": reason,
                                   "landing": true]
        try JSONSerialization.data(withJSONObject: note).write(to: URL(fileURLWithPath: held + ".json"))
        try write(record, to: held + ".landing")
        return held
    }

    static let landingRecord = #"{"landed":0,"digests":[],"attempts":1,"lastError":"timed out","nextAttemptAt":1700000000,"bytesPerSecond":2000000}"#

    /// A landing record's rate of 1e300 made `status` and `list` die with SIGILL (`Int64(rate)`)
    /// while a lander transferred the take. Every number of the record, set to each hostile
    /// value: every command answers, no crazy number is shown, and a rate out of range is no
    /// rate. The well-formed record shows its rate (the check can fail).
    @Test(arguments: ["landed", "attempts", "nextAttemptAt", "bytesPerSecond"])
    func hostileNumbersInALandingRecord(_ field: String) throws {
        try FS.withScratchPool("numbers-landing-\(field)", capacity: "16M") { _, pool in
            let held = try Self.plantLandingTake(pool, record: Self.landingRecord)
            try Self.holdingLock(held) {
                let sound = try CrashKit.provideo(pool, ["status"])
                #expect(sound.status == 0 && sound.stdout.contains("0 B of 4.0 KiB (0%), 1.9 MiB/s"),
                        "the well-formed record: \(sound)")
                for literal in Self.hostileNumbers {
                    try Self.write(try Self.replacingNumber(field, with: literal, in: Self.landingRecord), to: held + ".landing")
                    for command in [["status"], ["status", "--json"], ["list"], ["list", "--json"], ["list", "-Hp"],
                                    ["metrics"]] {
                        let outcome = try CrashKit.provideo(pool, command)
                        let context = "\(command) with \(field) = \(literal)"
                        Self.expectAnswered(outcome, context)
                        #expect(outcome.status == 0, "\(context): \(outcome)")
                        Self.expectSaneNumbers(outcome, context)
                    }
                    let status = try TestSupport.poolStatus(pool)
                    let landing = try #require(status.landing?.first, "\(field) = \(literal): the take is not landing")
                    #expect(landing.landedBytes == 0 && landing.transferring == true, "\(field) = \(literal): \(landing)")
                    if let rate = landing.bytesPerSecond {
                        // Only the untouched rate survives a hostile value in another field.
                        #expect(field != "bytesPerSecond" && rate == 2_000_000, "\(field) = \(literal): rate \(rate)")
                    }
                    if let next = landing.nextAttemptAt {
                        #expect((0...1e11).contains(next), "\(field) = \(literal): next attempt at \(next)")
                    }
                    #expect((0...1_000_000).contains(landing.attempts), "\(field) = \(literal): \(landing.attempts) attempts")
                }
            }
        }
    }

    /// A held take's note: a length out of range is the file's size, and a number JSON cannot
    /// fit leaves the note unreadable; never a crazy size.
    @Test func hostileLengthsInAHeldNote() throws {
        try FS.withScratchPool("numbers-note", capacity: "16M") { _, pool in
            let held = try Self.plantLandingTake(pool, record: Self.landingRecord)
            let note = try String(contentsOfFile: held + ".json", encoding: .utf8)
            for literal in Self.hostileNumbers {
                try Self.write(try Self.replacingNumber("length", with: literal, in: note), to: held + ".json")
                for command in [["status"], ["list"], ["list", "--json"], ["metrics"]] {
                    let outcome = try CrashKit.provideo(pool, command)
                    Self.expectAnswered(outcome, "\(command) with length = \(literal)")
                    Self.expectSaneNumbers(outcome, "\(command) with length = \(literal)")
                }
                let listing = try TestSupport.poolListing(pool)
                #expect(listing.recordings.allSatisfy { $0.length == 4096 || $0.length == 0 },
                        "length = \(literal): \(listing.recordings.map(\.length))")
            }
        }
    }

    /// A salvage log this pool cannot read (a length no `Int64` holds) is named by `list`, which
    /// still lists the rest, and never overwritten: the next salvage keeps it beside as
    /// `recovered.json.unreadable` and begins a new log with its own take. Read as "no log", the
    /// next salvage replaced it and every earlier entry was gone. `list --json` says why its
    /// list is empty, and `metrics` leaves the salvage counter out rather than report 0.
    @Test func anUnreadableSalvageLogIsKeptBeside() throws {
        try FS.withScratchPool("numbers-recovered-unreadable", capacity: "16M") { scratch, pool in
            let unreadable = #"[{"path":"/nonexistent/r.mov","length":1e300,"salvagedAt":1700000000}]"#
            try Self.write(unreadable, to: pool + "/recovered.json")
            let list = try CrashKit.provideo(pool, ["list"])
            #expect(list.status == 0, "\(list)")
            #expect(list.stderr.contains("warning: \(pool)/recovered.json is not a salvage log this pool can read"), "\(list)")
            // For scripts too: the JSON says why the list is empty, and the counter is left out,
            // never 0 (an alert on salvaged takes would never fire).
            let unknown = try TestSupport.poolListing(pool)
            #expect(unknown.recovered.isEmpty && unknown.recoveredUnreadable?.contains("is not a salvage log") == true,
                    "\(String(describing: unknown.recoveredUnreadable))")
            let metrics = try CrashKit.provideo(pool, ["metrics"])
            #expect(metrics.status == 0 && !metrics.stdout.contains("provideo_salvaged_recordings_total{")
                    && metrics.stdout.contains("# provideo_salvaged_recordings_total is unknown: "), "\(metrics.stdout)")
            let input = TestSupport.pattern(300_001, seed: 12)
            try CrashKit.killRecorderAfterCommit(pool, scratch + "/take.mov", input)
            let recover = try CrashKit.provideo(pool, ["recover"])
            #expect(recover.status == 0, "\(recover)")
            #expect(TestSupport.readFile(pool + "/recovered.json.unreadable") == Array(unreadable.utf8))
            let logged = try TestSupport.poolListing(pool).recovered
            #expect(logged.map(\.path) == [scratch + "/take.mov"] && logged.first?.length == Int64(input.count), "\(logged)")
            let counted = try CrashKit.provideo(pool, ["metrics"])
            #expect(counted.stdout.contains("provideo_salvaged_recordings_total{pool=\"\(pool)\"} 1"), "\(counted.stdout)")
            let whole = TestSupport.fileHolds(scratch + "/take.mov", input)
            #expect(whole)
        }
    }

    /// `recovered.json`: a time or a length no salvage wrote is called corrupt by `list`, not
    /// printed as a date or a size; the sound entry is printed as it is.
    @Test(arguments: ["length", "salvagedAt"])
    func hostileNumbersInTheSalvageLog(_ field: String) throws {
        try FS.withScratchPool("numbers-recovered-\(field)", capacity: "16M") { _, pool in
            let entry = #"[{"path":"/nonexistent/r.mov","length":4096,"salvagedAt":1700000000}]"#
            try Self.write(entry, to: pool + "/recovered.json")
            let sound = try CrashKit.provideo(pool, ["list"])
            #expect(sound.status == 0 && sound.stdout.contains("recovered 2023-11-14 22:13:20 +0000: /nonexistent/r.mov (4096 bytes)"),
                    "the sound entry: \(sound)")
            for literal in Self.hostileNumbers {
                try Self.write(try Self.replacingNumber(field, with: literal, in: entry), to: pool + "/recovered.json")
                for command in [["list"], ["list", "--json"], ["list", "-Hp"], ["metrics"], ["status"], ["recover"]] {
                    let outcome = try CrashKit.provideo(pool, command)
                    let context = "\(command) with \(field) = \(literal)"
                    Self.expectAnswered(outcome, context)
                    #expect(outcome.status == 0, "\(context): \(outcome)")
                    Self.expectSaneNumbers(outcome, context)
                }
                let list = try CrashKit.provideo(pool, ["list"])
                switch (field, literal) {
                case ("salvagedAt", "-1e300"), ("salvagedAt", "1e300"), ("salvagedAt", "-1"),
                     ("salvagedAt", "9223372036854775808"), ("salvagedAt", "18446744073709551616"):
                    #expect(list.stdout.contains("recovered at an unknown time (its salvagedAt in recovered.json is corrupt)"),
                            "salvagedAt = \(literal): \(list)")
                case ("length", "-1"):
                    #expect(list.stdout.contains("(length unknown: its length in recovered.json is corrupt)"), "\(list)")
                default:
                    break
                }
            }
        }
    }

    // MARK: - a running capture

    /// A pool with a capture whose recorder was killed, made to look alive again: the test
    /// holds its `progress` lock, so `status` shows it running from its crafted files.
    static func withRunningCapture(_ name: String, _ body: (_ pool: String, _ capture: String) throws -> Void) throws {
        try FS.withScratchPool(name, capacity: "24M") { dir, pool in
            try FileManager.default.createDirectory(atPath: dir + "/out", withIntermediateDirectories: false)
            try CrashKit.killRecorderAfterCommit(pool, dir + "/out/take.mov", TestSupport.pattern(4096, seed: 37))
            let capture = TestSupport.onlyCapture(pool)
            try holdingLock(capture + "/progress") { try body(pool, capture) }
            _ = try CrashKit.provideo(pool, ["recover"])
        }
    }

    /// A progress block: the length 4096, then the counters (`CaptureCounters`): 2 overruns, 0
    /// failures, 0 short writes, 3 buffers in flight, 5 commits, and two histograms of 10
    /// samples of 1 ms (all at most every bound from 1 ms on), sum 10 ms, longest 1 ms.
    static func progressWords() -> [UInt64] {
        func histogram() -> [UInt64] {
            LatencyBuckets.boundsNanoseconds.map { $0 >= 1_000_000 ? 10 : 0 } + [10, 10_000_000, 1_000_000]
        }
        return [4096, 2, 0, 0, 3, 5] + histogram() + histogram()
    }

    static func writeProgress(_ words: [UInt64], to path: String) throws {
        var bytes = [UInt8](repeating: 0, count: 4096)
        for (index, word) in words.enumerated() {
            for byte in 0..<8 { bytes[index * 8 + byte] = UInt8(truncatingIfNeeded: word >> (8 * UInt64(byte))) }
        }
        let fd = open(path, O_WRONLY)
        try #require(fd >= 0)
        defer { close(fd) }
        #expect(pwrite(fd, bytes, bytes.count, 0) == bytes.count)
    }

    /// Progress counters at 2^64−1 showed "-1 buffer(s) in flight". Each counter set to an
    /// impossible value reads as counters unknown: `status` shows none, `--json` has none,
    /// `metrics` exports no crazy number; the sound block shows its counters (the check can
    /// fail).
    @Test func impossibleProgressCountersReadAsUnknown() throws {
        try Self.withRunningCapture("numbers-progress") { pool, capture in
            let sound = Self.progressWords()
            try Self.writeProgress(sound, to: capture + "/progress")
            let shown = try CrashKit.provideo(pool, ["status"])
            #expect(shown.status == 0 && shown.stdout.contains("3 buffer(s) in flight, 2 overrun(s)"), "sound block: \(shown)")
            #expect(try TestSupport.poolStatus(pool).captures.first?.counters?.commits == 5)
            let histogram = 6 + LatencyBuckets.boundsNanoseconds.count  // the first histogram's count
            var cases: [(String, Int, UInt64)] = []
            for (name, index) in [("overruns", 1), ("overrunFailures", 2), ("shortWritesRetried", 3), ("buffersInFlight", 4),
                                  ("commits", 5), ("first bucket", 6), ("count", histogram), ("sum", histogram + 1),
                                  ("maximum", histogram + 2), ("completion count", histogram + 3 + LatencyBuckets.boundsNanoseconds.count)] {
                cases += [(name, index, UInt64.max), (name, index, 1 << 63)]
                if name != "sum" && name != "maximum" { cases.append((name, index, (1 << 53) + 1)) }
            }
            cases.append(("buffersInFlight", 4, (1 << 24) + 1))
            cases.append(("a falling bucket", 6 + 12, 3))  // 10, then 3: cumulative counts never fall
            cases.append(("a bucket above the count", 6 + LatencyBuckets.boundsNanoseconds.count - 1, 11))
            cases.append(("a longest sample above the sum", histogram + 2, 20_000_000))
            for (name, index, value) in cases {
                var words = sound
                words[index] = value
                try Self.writeProgress(words, to: capture + "/progress")
                let context = "\(name) = \(value)"
                for command in [["status"], ["list"], ["metrics"]] {
                    let outcome = try CrashKit.provideo(pool, command)
                    #expect(outcome.reason == .exit && outcome.status == 0, "\(command), \(context): \(outcome)")
                    Self.expectSaneNumbers(outcome, "\(command), \(context)")
                    #expect(!outcome.stdout.contains("buffer(s) in flight"), "\(command), \(context): \(outcome)")
                    if Int64(bitPattern: value) >= 1 << 20 {
                        #expect(!outcome.stdout.contains(String(Int64(bitPattern: value))),
                                "\(command), \(context): the value is shown: \(outcome)")
                    }
                }
                #expect(try TestSupport.poolStatus(pool).captures.first.map { $0.counters == nil } == true,
                        "\(context): counters are shown")
            }
        }
    }

    /// The journal's numbers: a bitrate below 0 (it lowered the admission sum), an alignment
    /// that is no power of two, a time that is no time are `corruptState` naming the field (a live
    /// capture's is named by `status` as undecided); a
    /// number JSON cannot fit is an unreadable journal; none traps.
    @Test func hostileNumbersInARunningCapturesJournal() throws {
        try Self.withRunningCapture("numbers-journal") { pool, capture in
            let journal = try String(contentsOfFile: capture + "/capture.json", encoding: .utf8)
            let sound = try CrashKit.provideo(pool, ["status"])
            #expect(sound.status == 0 && sound.stdout.contains("20 Mbit/s, "), "sound journal: \(sound)")
            for field in ["bitrate", "alignment", "startedAt", "pid"] {
                for literal in Self.hostileNumbers {
                    try Self.write(try Self.replacingNumber(field, with: literal, in: journal), to: capture + "/capture.json")
                    for command in [["status"], ["status", "--json"], ["list"], ["metrics"], ["list", "-Hp"]] {
                        let outcome = try CrashKit.provideo(pool, command)
                        let context = "\(command) with \(field) = \(literal)"
                        Self.expectAnswered(outcome, context)
                        Self.expectSaneNumbers(outcome, context)
                    }
                    let status = try CrashKit.provideo(pool, ["status"])
                    let refused = switch (field, literal) {
                    case ("bitrate", "-1"), ("alignment", "-1"), ("alignment", "-0.0"), ("startedAt", "1e300"),
                         ("startedAt", "-1e300"), ("startedAt", "9223372036854775808"), ("startedAt", "18446744073709551616"):
                        true
                    default: false
                    }
                    if refused {
                        // A live capture whose journal cannot be read is named, never a reason to
                        // refuse the pool (issue 37, a stray entry in captures/).
                        #expect(status.status == 0 && status.stderr.contains("may be a running capture")
                                && status.stderr.contains("corrupt") && status.stderr.contains(field)
                                && status.stderr.contains("capture.json"), "\(field) = \(literal): \(status)")
                    }
                }
                try Self.write(journal, to: capture + "/capture.json")
            }
        }
    }

    // MARK: - member text on root's terminal

    /// A held take's destination and reason, and its landing record's last error, with ESC,
    /// BEL, CR and a C1 CSI: escaped in `list` and `status`, exact in `--json`.
    @Test func memberTextInNotesIsEscaped() throws {
        try FS.withScratchPool("text-notes", capacity: "16M") { scratch, pool in
            let hostile = Self.hostileText(in: scratch), escaped = Self.hostileEscaped(in: scratch)
            let record = #"{"landed":0,"digests":[],"attempts":2,"lastError":"#
                + String(decoding: try JSONEncoder().encode(hostile), as: UTF8.self) + "}"
            try Self.plantLandingTake(pool, destination: hostile, reason: hostile, record: record)
            for command in [["list"], ["status"], ["list", "-Hp"], ["metrics"]] {
                let outcome = try CrashKit.provideo(pool, command)
                #expect(outcome.status == 0, "\(command): \(outcome)")
                Self.expectNoControls(outcome, "\(command)")
            }
            let list = try CrashKit.provideo(pool, ["list"])
            #expect(list.stdout.contains("meant for \(escaped): \(escaped)"), "list: \(list)")
            #expect(list.stdout.contains("→ \(escaped): "), "list: \(list)")
            #expect(list.stdout.contains("attempt 2 failed: \(escaped)"), "list: \(list)")
            let status = try CrashKit.provideo(pool, ["status"])
            #expect(status.stdout.contains("→ \(escaped): ") && status.stdout.contains("failed: \(escaped)"),
                    "status: \(status)")
            let listing = try TestSupport.poolListing(pool)
            #expect(listing.recordings.first?.destination == hostile)
            #expect(listing.recordings.first?.reason == hostile)
            #expect(listing.landing?.first?.lastError == hostile)
            #expect(try TestSupport.poolStatus(pool).landing?.first?.destination == hostile)
        }
    }

    /// `land` prints the take it could not land and why: escaped; `land --json` exact.
    @Test func memberTextInLandIsEscaped() throws {
        try FS.withScratchPool("text-land", capacity: "16M") { scratch, pool in
            let hostile = Self.hostileText(in: scratch), escaped = Self.hostileEscaped(in: scratch)
            try Self.plantLandingTake(pool, destination: hostile + "/take.mov", record: Self.landingRecord)
            let land = try CrashKit.provideo(pool, ["land"])
            #expect(land.reason == .exit && land.status == 1 && land.stderr.contains("did not land"), "land: \(land)")
            #expect(land.stderr.contains(escaped + "/take.mov"), "land: \(land)")
            Self.expectNoControls(land, "land")
            let json = try CrashKit.provideo(pool, ["land", "--json"])
            let results = try JSONDecoder().decode([LandingResult].self, from: Data(json.stdout.utf8))
            #expect(results.first?.destination == hostile + "/take.mov", "land --json: \(json)")
        }
    }

    /// `recovered.json`'s path: escaped in `list`, exact in `list --json`.
    @Test func memberTextInTheSalvageLogIsEscaped() throws {
        try FS.withScratchPool("text-recovered", capacity: "16M") { scratch, pool in
            let hostile = Self.hostileText(in: scratch), escaped = Self.hostileEscaped(in: scratch)
            let entry = [SalvagedRecording(path: hostile, length: 4096, salvagedAt: 1_700_000_000,
                                           note: hostile)]
            try JSONEncoder().encode(entry).write(to: URL(fileURLWithPath: pool + "/recovered.json"))
            let list = try CrashKit.provideo(pool, ["list"])
            #expect(list.status == 0 && list.stdout.contains(": \(escaped) (4096 bytes)"), "list: \(list)")
            Self.expectNoControls(list, "list")
            Self.expectNoControls(try CrashKit.provideo(pool, ["list", "-Hp"]), "list -Hp")
            #expect(try TestSupport.poolListing(pool).recovered.first?.path == hostile)
        }
    }

    /// A running capture's destination and engine, from its journal: escaped in `status`
    /// and `list`, exact in `status --json`.
    @Test func memberTextInAJournalIsEscaped() throws {
        try Self.withRunningCapture("text-journal") { pool, capture in
            let scratch = (pool as NSString).deletingLastPathComponent
            let hostile = Self.hostileText(in: scratch), escaped = Self.hostileEscaped(in: scratch)
            let path = capture + "/capture.json"
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            var journal = try JSONSerialization.jsonObject(with: data) as! [String: Any]
            journal["destination"] = hostile
            journal["engine"] = hostile
            try JSONSerialization.data(withJSONObject: journal).write(to: URL(fileURLWithPath: path))
            for command in [["status"], ["list"], ["list", "-Hp"], ["status", "-Hp"]] {
                let outcome = try CrashKit.provideo(pool, command)
                #expect(outcome.status == 0, "\(command): \(outcome)")
                Self.expectNoControls(outcome, "\(command)")
            }
            let status = try CrashKit.provideo(pool, ["status"])
            #expect(status.stdout.contains("capture     → \(escaped): "), "status: \(status)")
            #expect(status.stdout.contains("engine      \(escaped)"), "status: \(status)")
            let captures = try TestSupport.poolStatus(pool).captures
            #expect(captures.first?.destination == hostile && captures.first?.engine == hostile)
        }
    }

    /// The escaping itself: named escapes, `\xHH`, `\uHHHH`, backslash doubled, everything
    /// else kept.
    @Test func terminalTextEscapes() {
        #expect(TerminalText.escaped("plain /a/b ünïcødé 🎬") == "plain /a/b ünïcødé 🎬")
        #expect(TerminalText.escaped("a\u{1B}[2Jb") == "a\\x1b[2Jb")
        #expect(TerminalText.escaped("\r\n\t\u{07}\u{08}\u{0B}\u{0C}\u{00}\u{7F}") == "\\r\\n\\t\\a\\b\\v\\f\\x00\\x7f")
        #expect(TerminalText.escaped("\u{9B}\u{202E}\u{2028}x\\") == "\\u009b\\u202e\\u2028x\\\\")
        #expect(Int64(checked: 1e300) == nil && Int64(checked: -1e300) == nil && Int64(checked: .nan) == nil)
        #expect(Int64(checked: .infinity) == nil && Int64(checked: 9_223_372_036_854_775_808.0) == nil)
        #expect(Int64(checked: -0.0) == 0 && Int64(checked: -1) == -1 && Int64(checked: 2.9) == 2)
        #expect(Int64(checked: -9_223_372_036_854_775_808.0) == Int64.min && Int(checked: 1e18) == 1_000_000_000_000_000_000)
    }
}

import Foundation
import TestSupport
import Testing

/// `--json` on every command that changes a pool, and `record`'s summary, run as processes:
/// the values match the pool's own status.
@Suite struct CommandJSONTests {
    private func object(_ result: TestSupport.ProcessResult, _ context: String,
                        sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: Any] {
        #expect(result.status == 0, "\(context): \(result.stderr)", sourceLocation: sourceLocation)
        return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
                            "\(context): \(result.stdout)", sourceLocation: sourceLocation)
    }

    @Test func poolCommandsReportJSON() throws {
        try TestSupport.withScratch("json-pool") { dir in
            let pool = dir + "/pool"
            defer { FS.destroyQuietly(pool) }
            let created = try object(try FS.provideo(pool, "create", "--capacity", "8M", "--json"), "create")
            #expect(created["path"] as? String == pool && created["initialCapacity"] as? Int64 == 8 << 20)
            #expect(created["zeroFilled"] as? Bool == false)
            let resized = try object(try FS.provideo(pool, "resize", "12M", "--json"), "resize")
            #expect(resized["initialCapacity"] as? Int64 == 12 << 20)
            #expect(try TestSupport.poolStatus(pool).initialCapacity == 12 << 20)

            let input = TestSupport.pattern(3_000_000, seed: 14)
            let record = try object(try FS.provideo(pool, "record", dir + "/take.mov", "--json", stdin: Data(input)), "record")
            #expect(record["path"] as? String == dir + "/take.mov" && record["length"] as? Int64 == 3_000_000)
            #expect(record["copiedAndVerified"] as? Bool == false && record["storageFull"] as? Bool == false)
            #expect((record["inputBitrate"] as? Int64 ?? 0) > 0 && (record["appends"] as? Int64 ?? 0) > 0)
            let recorded = TestSupport.fileHolds(dir + "/take.mov", input)
            #expect(recorded)

            let replenished = try object(try FS.provideo(pool, "replenish", "--json"), "replenish")
            #expect(replenished["missing"] as? Int64 == 0)
            #expect(replenished["remainingCapacity"] as? Int64 == (try TestSupport.poolStatus(pool).remainingCapacity))
            #expect((replenished["added"] as? Int64 ?? 0) >= 3_000_000)

            let checked = try object(try FS.provideo(pool, "check", "--json"), "check")
            #expect(checked["ok"] as? Bool == true && (checked["problems"] as? [Any])?.isEmpty == true)
            let recovered = try object(try FS.provideo(pool, "recover", "--json"), "recover")
            #expect((recovered["salvaged"] as? [Any])?.isEmpty == true && recovered["recoveredEarlier"] as? Int == 0)

            let destroyed = try object(try FS.provideo(pool, "destroy", "--json"), "destroy")
            #expect(destroyed["path"] as? String == pool && destroyed["removedRemainsOnly"] as? Bool == false)
            #expect(!FileManager.default.fileExists(atPath: pool + "/pool.json"))
        }
    }

    /// A destination on another filesystem (tmpfs) is copied and verified, and the summary says so.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/dev/shm"), "no /dev/shm (tmpfs) on this machine"))
    func recordSummarySaysCopied() throws {
        try FS.withScratchPool(capacity: "8M") { _, pool in
            let destination = "/dev/shm/" + TestSupport.uniqueName("provideo-test", suffix: ".mov")
            defer { try? FileManager.default.removeItem(atPath: destination) }
            let result = try FS.provideo(pool, "record", destination, stdin: Data(TestSupport.pattern(1_000_000, seed: 3)))
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains("; copied to another filesystem and verified at \(destination);"), "\(result.stdout)")
            // A copy took nothing from the reserve for good: no word about replenishing.
            #expect(!result.stdout.contains("reserve") && result.stdout.split(separator: "\n").count == 1, "\(result.stdout)")
            // A copy shorter than the progress interval prints no progress line in a log.
            #expect(result.stderr.isEmpty, "\(result.stderr)")
        }
    }

    /// `land --json` is one JSON list: `[]` with nothing to land (it printed nothing), then the
    /// take it landed. The take waits in the pool because its destination is on tmpfs.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/dev/shm"), "no /dev/shm (tmpfs) on this machine"))
    func landReportsAJSONList() throws {
        try FS.withScratchPool(capacity: "8M") { _, pool in
            let empty = try FS.provideo(pool, "land", "--json")
            #expect(empty.status == 0, "\(empty.stderr)")
            #expect(empty.stdout == "[]\n", "land --json with nothing to land printed '\(empty.stdout)'")
            let none = try #require(try JSONSerialization.jsonObject(with: Data(empty.stdout.utf8)) as? [Any])
            #expect(none.isEmpty)

            let destination = "/dev/shm/" + TestSupport.uniqueName("provideo-test-land", suffix: ".mov")
            defer { try? FileManager.default.removeItem(atPath: destination) }
            let input = TestSupport.pattern(1_000_000, seed: 21)
            let record = try FS.provideo(pool, "record", destination, "--land", "background", stdin: Data(input))
            #expect(record.status == 0, "\(record.stderr)")
            #expect(!FileManager.default.fileExists(atPath: destination), "the take landed before `land`")
            let landed = try FS.provideo(pool, "land", "--json")
            #expect(landed.status == 0, "\(landed.stderr)")
            let results = try #require(try JSONSerialization.jsonObject(with: Data(landed.stdout.utf8)) as? [[String: Any]],
                                       "\(landed.stdout)")
            #expect(results.count == 1)
            #expect(results.first?["destination"] as? String == destination && results.first?["landed"] as? Bool == true)
            #expect(results.first?["length"] as? Int64 == 1_000_000)
            let whole = TestSupport.fileHolds(destination, input)
            #expect(whole)
        }
    }

    /// A take whose destination appeared while recording is held; `move --json` says where
    /// it went.
    @Test func moveReportsJSON() throws {
        try FS.withScratchPool(capacity: "8M") { dir, pool in
            let (recorder, input) = try FS.startRecorder(pool, dir + "/take.mov")
            try input.write(contentsOf: Data(TestSupport.pattern(100_000, seed: 9)))
            #expect(FileManager.default.createFile(atPath: dir + "/take.mov", contents: Data("someone else's".utf8)))
            try input.close()
            recorder.waitUntilExit()
            let held = try #require(try JSONSerialization.jsonObject(
                with: Data(try FS.provideo(pool, "list", "--json").stdout.utf8)) as? [String: Any])
            let recording = try #require((held["recordings"] as? [[String: Any]])?.first?["path"] as? String)
            let moved = try object(try FS.provideo(pool, "move", recording, dir + "/take2.mov", "--json"), "move")
            #expect(moved["held"] as? String == recording && moved["path"] as? String == dir + "/take2.mov")
            let whole = TestSupport.fileHolds(dir + "/take2.mov", TestSupport.pattern(100_000, seed: 9))
            #expect(whole)
        }
    }

    @Test func destroyingNoPoolDoesNotSuggestCreating() throws {
        try TestSupport.withScratch("json-nopool") { dir in
            let result = try FS.provideo(dir + "/none", "destroy")
            #expect(result.status == 1)
            #expect(result.stderr == "provideo: no pool at \(dir)/none: nothing to destroy\n", "\(result.stderr)")
        }
    }

    /// The error object a failed `--json` run prints on standard output, with the exit status.
    private func errorObject(_ result: TestSupport.ProcessResult, _ context: String,
                             sourceLocation: SourceLocation = #_sourceLocation) throws -> (code: String?, message: String?) {
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.count == 1, "\(context): one line, not \(result.stdout)", sourceLocation: sourceLocation)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
                                  "\(context): \(result.stdout)", sourceLocation: sourceLocation)
        #expect(object.keys.sorted() == ["error"], sourceLocation: sourceLocation)
        let error = object["error"] as? [String: Any]
        return (error?["code"] as? String, error?["message"] as? String)
    }

    /// A command run with `--json` that fails prints one JSON error object on standard output
    /// (the code is the ProVideoError code's name, or "usage") and its message on standard error,
    /// with the exit statuses unchanged; without `--json` standard output stays empty.
    @Test func failuresWithJSONPrintAnErrorObject() throws {
        try FS.withScratchPool(capacity: "8M") { dir, pool in
            let missing = try FS.provideo(dir + "/none", "status", "--json")
            #expect(missing.status == 1)
            let notFound = try errorObject(missing, "status of no pool")
            #expect(notFound.code == "poolNotFound" && missing.stderr == "provideo: \(notFound.message ?? "?"); run "
                    + "`provideo --pool \(dir)/none create --capacity SIZE`\n", "\(missing.stderr)")
            #expect(try FS.provideo(dir + "/none", "status").stdout.isEmpty)

            let usage = try FS.provideo(pool, "list", "--json", "--bogus")
            #expect(usage.status == 2)
            let refused = try errorObject(usage, "an unknown option")
            #expect(refused.code == "usage" && refused.message == "unexpected argument '--bogus'")
            #expect(usage.stderr.hasPrefix("provideo: unexpected argument '--bogus'\n"), "\(usage.stderr)")

            let empty = try FS.provideo(pool, "record", dir + "/take.mov", "--json", stdin: Data())
            #expect(empty.status == 1)
            #expect(try errorObject(empty, "record without input").code == "invalidArgument")

            let bandwidth = try FS.provideo(pool, "set-bandwidth", "0", "--json")
            let zero = try errorObject(bandwidth, "a bandwidth of 0")
            #expect(bandwidth.status == 2 && zero.code == "usage")
        }
    }

    /// The library's error names what deals with it (`remedies`); the tool words it: the
    /// commands on standard error after the message, the operations' names in the JSON object.
    @Test func aRefusalSaysWhichCommandsDealWithIt() throws {
        try FS.withScratchPool(capacity: "8M") { dir, pool in
            let text = try FS.provideo(pool, "create", "--capacity", "8M")
            #expect(text.status == 1)
            #expect(text.stderr == "provideo: a pool already exists at \(pool); run `provideo resize` or `provideo destroy`\n",
                    "\(text.stderr)")
            let json = try FS.provideo(pool, "create", "--capacity", "8M", "--json")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
            let error = try #require(object["error"] as? [String: Any], "\(json.stdout)")
            #expect(error["code"] as? String == "poolExists")
            #expect(error["message"] as? String == "a pool already exists at \(pool)")
            #expect(error["remedies"] as? [String] == ["resize", "destroy"], "\(json.stdout)")
            // An error that names none has no `remedies` key.
            let empty = try FS.provideo(pool, "record", dir + "/take.mov", "--json", stdin: Data())
            let none = try #require(try JSONSerialization.jsonObject(with: Data(empty.stdout.utf8)) as? [String: Any])
            #expect((none["error"] as? [String: Any])?.keys.sorted() == ["code", "message"], "\(empty.stdout)")
        }
    }

    /// `set-bandwidth --json`: the bandwidth and what may be declared, in bits per second, null
    /// after `none`; the pool's status agrees.
    @Test func setBandwidthReportsJSON() throws {
        try FS.withScratchPool(capacity: "8M") { _, pool in
            let set = try object(try FS.provideo(pool, "set-bandwidth", "2G", "--json"), "set-bandwidth 2G")
            #expect(set["path"] as? String == pool && set["bandwidth"] as? Int64 == 2_000_000_000)
            #expect(set["admissibleBitrate"] as? Int64 == 1_600_000_000)
            #expect(try TestSupport.poolStatus(pool).bandwidth == 2_000_000_000)
            let none = try object(try FS.provideo(pool, "set-bandwidth", "none", "--json"), "set-bandwidth none")
            #expect(none["bandwidth"] is NSNull && none["admissibleBitrate"] is NSNull, "\(none)")
            #expect(try TestSupport.poolStatus(pool).bandwidth == nil)
        }
    }
}

import Foundation
import Glibc
import TestSupport
import Testing
@testable import ProVideoStorage

/// Bad input to the CLI and the library: a clear error, the documented exit status (2 for a
/// usage error, 1 for an operation refused), and nothing changed on disk.
@Suite struct BadInputTests {
    /// The last two fit in 63 bits but exceed `Pool.maximumCapacity` (rounding them up to the
    /// allocation unit overflowed and crashed).
    static let badSizes = ["12x", "-1", "", "9223372036854775808", "99999999999999999999", "1.5", "1.5X", "0", "4095",
                           "9223372036854775807", "9223372036854771712"]

    /// What the message about a bad size says: the minimum for a number too small.
    static func refusal(_ size: String) -> String {
        ["0", "4095"].contains(size) ? "the minimum is 4.0 MiB (4194304 bytes)" : "invalid size '\(size)'"
    }

    /// A pool in a scratch directory for `body`, destroyed afterwards.
    private func withPool(_ name: String = #function, capacity: String = "16M",
                          _ body: (_ dir: String, _ pool: String) throws -> Void) throws {
        try TestSupport.withScratch("badinput-\(name)") { dir in
            let pool = dir + "/pool"
            try CrashKit.createPool(pool, capacity: capacity)
            defer { if CrashKit.exists(pool + "/pool.json") { _ = try? CrashKit.provideo(pool, ["destroy"]) } }
            try body(dir, pool)
        }
    }

    /// Expects `outcome` to be a normal exit with `status` and a message on standard error
    /// containing every one of `phrases` (case-insensitive).
    private func expectRefused(_ outcome: CrashKit.Outcome, status: Int32, _ phrases: [String], _ context: String,
                               sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(outcome.reason == .exit && outcome.status == status, "\(context): \(outcome)", sourceLocation: sourceLocation)
        let message = outcome.stderr.lowercased()
        for phrase in phrases {
            #expect(message.contains(phrase.lowercased()), "\(context): the message lacks '\(phrase)': \(outcome.stderr)",
                    sourceLocation: sourceLocation)
        }
        // Standard output is empty, or (a command run with --json) one JSON error object whose
        // message is the one on standard error.
        guard !outcome.stdout.isEmpty else { return }
        let object = try? JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any]
        let error = object?["error"] as? [String: Any]
        let errorMessage = error?["message"] as? String ?? ""
        #expect(error?["code"] is String && !errorMessage.isEmpty && outcome.stderr.contains(errorMessage),
                "\(context): printed \(outcome.stdout)", sourceLocation: sourceLocation)
    }

    @Test(arguments: badSizes)
    func badSizeToCreate(_ size: String) throws {
        try TestSupport.withScratch("badinput-create") { dir in
            let pool = dir + "/pool"
            let outcome = try CrashKit.provideo(pool, ["create", "--capacity", size])
            expectRefused(outcome, status: 2, [Self.refusal(size)], "create --capacity '\(size)'")
            #expect(CrashKit.contents(dir).isEmpty, "create left \(CrashKit.contents(dir))")
        }
    }

    @Test(arguments: badSizes)
    func badSizeToResize(_ size: String) throws {
        try withPool { _, pool in
            let before = CrashKit.snapshot(pool)
            let outcome = try CrashKit.provideo(pool, ["resize", size])
            expectRefused(outcome, status: 2, [Self.refusal(size)], "resize '\(size)'")
            #expect(CrashKit.snapshot(pool) == before, "resize '\(size)' changed the pool")
        }
    }

    /// A valid size the filesystem cannot hold: exit 1, "not enough space" said plainly, and
    /// the pool untouched.
    @Test func resizeBeyondTheDisk() throws {
        try withPool { _, pool in
            let before = CrashKit.snapshot(pool)
            let outcome = try CrashKit.provideo(pool, ["resize", "100T"])
            expectRefused(outcome, status: 1, ["cannot allocate", "missing"], "resize 100T")
            #expect(CrashKit.snapshot(pool) == before, "a refused resize changed the pool")
            try CrashKit.expectSane(pool, "after resize 100T")
        }
    }

    @Test func badCapacityThroughTheLibrary() throws {
        try TestSupport.withScratch("badinput-library") { dir in
            for capacity: Int64 in [0, -1, Int64.min, Int64.max, Int64.max - 4095, Pool.maximumCapacity + 1] {
                #expect(throws: ProVideoError.self) { _ = try Pool.create(at: dir + "/pool", capacity: capacity) }
                do { _ = try Pool.create(at: dir + "/pool", capacity: capacity) } catch let error as ProVideoError {
                    #expect(error.code == .invalidArgument)
                }
            }
            #expect(CrashKit.contents(dir).isEmpty)
            let pool = try Pool.create(at: dir + "/pool", capacity: 16 << 20, measuringBandwidth: false)
            defer { try? pool.destroy() }
            let before = CrashKit.snapshot(dir + "/pool")
            for capacity: Int64 in [0, -4096, Int64.max, Int64.max - 4095, Pool.maximumCapacity + 1] {
                do {
                    try pool.resize(to: capacity)
                    Issue.record("resize(to: \(capacity)) succeeded")
                } catch let error as ProVideoError {
                    #expect(error.code == .invalidArgument, "resize(to: \(capacity)): \(error.code) \(error)")
                }
            }
            // The largest capacity taken is rounded without overflow, then refused for space.
            do {
                try pool.resize(to: Pool.maximumCapacity)
                Issue.record("resize(to: \(Pool.maximumCapacity)) succeeded")
            } catch let error as ProVideoError {
                #expect(error.code == .notEnoughSpace, "\(error.code) \(error)")
            }
            #expect(CrashKit.snapshot(dir + "/pool") == before)
        }
    }

    /// Destinations that would put the recording inside the pool, however spelled: directly,
    /// with `..`, through a symbolic link to the pool directory (or a chain of them), or with
    /// the pool itself reached through a symbolic link. Refused with invalidDestination
    /// (exit 1) before anything is written; the pool unchanged; nothing created.
    @Test func destinationsInsideThePool() throws {
        try withPool { dir, pool in
            try FileManager.default.createSymbolicLink(atPath: dir + "/link", withDestinationPath: pool)
            try FileManager.default.createSymbolicLink(atPath: dir + "/chain", withDestinationPath: dir + "/link")
            try FileManager.default.createSymbolicLink(atPath: dir + "/relative", withDestinationPath: "pool")
            try FileManager.default.createDirectory(atPath: dir + "/sub", withIntermediateDirectories: false)
            let poolLink = dir + "/poollink"
            try FileManager.default.createSymbolicLink(atPath: poolLink, withDestinationPath: pool)
            let cases: [(pool: String, destination: String)] = [
                (pool, pool + "/take.mov"),
                (pool, dir + "/sub/../pool/take.mov"),
                (pool, pool + "/../pool/./take.mov"),
                (pool, dir + "/link/take.mov"),
                (pool, dir + "/chain/take.mov"),
                (pool, dir + "/relative/take.mov"),
                (poolLink, pool + "/take.mov"),
                (poolLink, poolLink + "/take.mov"),
            ]
            let before = CrashKit.snapshot(pool)
            let beforeDir = CrashKit.contents(dir)
            for (poolPath, destination) in cases {
                let outcome = try CrashKit.run("provideo", ["--pool", poolPath, "record", destination], input: Array("frame".utf8))
                expectRefused(outcome, status: 1, ["inside the pool"], "record \(destination) (pool \(poolPath))")
                #expect(CrashKit.snapshot(pool) == before, "record \(destination) changed the pool")
            }
            #expect(CrashKit.contents(dir) == beforeDir)

            // The library says invalidDestination, and the pool stays idle.
            let library = try Pool.open(at: pool)
            for destination in [dir + "/link/take.mov", dir + "/sub/../pool/take.mov"] {
                do {
                    let capture = try library.startCapture(to: destination)
                    try? capture.cancel()
                    Issue.record("startCapture(to: \(destination)) was accepted")
                } catch let error as ProVideoError {
                    #expect(error.code == .invalidDestination, "\(destination): \(error.code) \(error)")
                }
            }
            #expect(try library.busyReasons.isEmpty)
            #expect(CrashKit.snapshot(pool) == before)
            try CrashKit.expectSane(pool, "after refused destinations")
        }
    }

    /// Bitrates up to `Int64.max` bit/s are taken without a crash: as the admission bandwidth,
    /// as the rate `status` computes the time left at, and as a capture's declared rate.
    @Test func largestBitrates() throws {
        try withPool { dir, pool in
            let largest = "9223372036854775807"
            let set = try CrashKit.provideo(pool, ["set-bandwidth", largest])
            #expect(set.reason == .exit && set.status == 0, "set-bandwidth \(largest): \(set)")
            #expect(try TestSupport.poolStatus(pool).bandwidth == Int64.max)
            let status = try CrashKit.provideo(pool, ["status", "--bitrate", largest])
            #expect(status.reason == .exit && status.status == 0, "status --bitrate \(largest): \(status)")
            #expect(status.stdout.contains("time left"), "\(status.stdout)")
            let input = TestSupport.pattern(100_000, seed: 5)
            // The capture's buffers are the 1 GiB cap at this rate: populating them took 5 s of
            // system time alone and over 60 s in a loaded CI run (within `hangLimit`).
            let record = try CrashKit.provideo(pool, ["record", dir + "/take.mov", "--bitrate", largest], input: input)
            #expect(record.reason == .exit && record.status == 0, "record --bitrate \(largest): \(record)")
            let whole = TestSupport.fileHolds(dir + "/take.mov", input)
            #expect(whole)
            // Declared rates of captures forced in beside each other are added without overflow.
            #expect([Int64.max, Int64.max, 1].saturatingSum() == Int64.max)
            #expect([Int64(3), 4].saturatingSum() == 7)
        }
    }

    /// An empty destination (an unset shell variable) is a usage error saying a path is
    /// needed, not the current directory refused as existing; the library says
    /// invalidDestination. Nothing changes.
    @Test func emptyDestination() throws {
        try withPool { dir, pool in
            let before = CrashKit.snapshot(pool)
            let beforeDir = CrashKit.contents(dir)
            let record = try CrashKit.provideo(pool, ["record", ""], input: Array("frame".utf8))
            expectRefused(record, status: 2, ["provideo: ", "destination path"], "record ''")
            #expect(!record.stderr.contains("already exists"), "\(record.stderr)")
            let move = try CrashKit.provideo(pool, ["move", pool + "/recordings/x.mov", ""])
            expectRefused(move, status: 2, ["provideo: ", "destination path"], "move HELD ''")
            do {
                let capture = try Pool.open(at: pool).startCapture(to: "")
                try? capture.cancel()
                Issue.record("startCapture(to: \"\") was accepted")
            } catch let error as ProVideoError {
                #expect(error.code == .invalidDestination && error.message.contains("empty"), "\(error.code) \(error)")
            }
            #expect(CrashKit.snapshot(pool) == before, "a refused empty destination changed the pool")
            #expect(CrashKit.contents(dir) == beforeDir)
        }
    }

    /// The pool's own files are never a destination (they exist: never overwritten), and a
    /// destination whose directory is missing is refused before the capture starts.
    @Test func destinationsThatAreNotUsable() throws {
        try withPool { dir, pool in
            let before = CrashKit.snapshot(pool)
            for destination in [pool + "/reserve", pool + "/pool.json", pool] {
                let outcome = try CrashKit.run("provideo", ["--pool", pool, "record", destination], input: Array("x".utf8))
                #expect(outcome.reason == .exit && outcome.status == 1, "record \(destination): \(outcome)")
                #expect(outcome.stderr.contains("already exists") || outcome.stderr.contains("inside the pool"),
                        "record \(destination): \(outcome.stderr)")
            }
            let missing = try CrashKit.run("provideo", ["--pool", pool, "record", dir + "/missing/take.mov"], input: Array("x".utf8))
            expectRefused(missing, status: 1, ["does not exist"], "record into a missing directory")
            #expect(CrashKit.snapshot(pool) == before, "a refused record changed the pool")
            #expect(!CrashKit.exists(dir + "/missing"))
        }
    }

    /// A pool path that is a regular file: every command exits 1 saying so; the file is
    /// untouched and nothing appears beside it.
    @Test func poolPathIsARegularFile() throws {
        try TestSupport.withScratch("badinput-file") { dir in
            let file = dir + "/notapool"
            try Data("just a file\n".utf8).write(to: URL(fileURLWithPath: file))
            let before = CrashKit.snapshot(dir)
            let commands: [[String]] = [["status"], ["status", "--json"], ["check"], ["list"], ["recover"], ["replenish"],
                                        ["resize", "32M"], ["destroy"], ["create", "--capacity", "16M"],
                                        ["record", dir + "/take.mov"]]
            for command in commands {
                let outcome = try CrashKit.provideo(file, command, input: command[0] == "record" ? Array("x".utf8) : nil)
                expectRefused(outcome, status: 1, ["not a"], "\(command) on a file")
                #expect(outcome.stderr.contains(file), "\(command): the message does not name the path: \(outcome.stderr)")
            }
            #expect(CrashKit.snapshot(dir) == before, "a command changed the file or its directory")
            // A pool path under the file: the file is named as what is wrong.
            let under = try CrashKit.provideo(file + "/pool", ["create", "--capacity", "16M"])
            expectRefused(under, status: 1, ["\(file) is a file, not a directory"], "create under a file")
            do {
                _ = try Pool.open(at: file)
                Issue.record("Pool.open accepted a file")
            } catch let error as ProVideoError {
                #expect(error.code == .invalidArgument)
            }
        }
    }

    /// pool.json that cannot be used: garbage, truncated, empty, from a future format, or
    /// valid JSON of the wrong shape. Every command exits 1 with a message naming the file and
    /// what is wrong; every file of the pool is byte-identical afterwards.
    @Test(arguments: ["garbage", "truncated", "empty", "future", "wrongShape"])
    func unreadablePoolState(_ kind: String) throws {
        try withPool { dir, pool in
            let state = pool + "/pool.json"
            let original = TestSupport.readFile(state)
            let replacement: [UInt8]
            switch kind {
            case "garbage": replacement = Array("\u{1}\u{2}garbage{{{ not json".utf8)
            case "truncated": replacement = Array(original.prefix(original.count / 2))
            case "empty": replacement = []
            case "future":
                var object = try #require(try JSONSerialization.jsonObject(with: Data(original)) as? [String: Any])
                object["format"] = 99
                replacement = Array(try JSONSerialization.data(withJSONObject: object))
            default: replacement = Array(#"{"format": 1, "initialCapacity": "lots"}"#.utf8)
            }
            try Data(replacement).write(to: URL(fileURLWithPath: state))
            defer {
                // Put the real state back so the pool can be destroyed.
                try? Data(original).write(to: URL(fileURLWithPath: state))
            }
            let before = CrashKit.snapshot(pool)
            let commands: [[String]] = [["status"], ["status", "--json"], ["check"], ["list", "--json"], ["recover"],
                                        ["replenish"], ["resize", "32M"], ["destroy"], ["record", dir + "/take.mov"],
                                        ["move", pool + "/recordings/x.mov"]]
            let phrase = kind == "future" ? "newer than this version" : "unreadable"
            for command in commands {
                let outcome = try CrashKit.provideo(pool, command, input: command[0] == "record" ? Array("x".utf8) : nil)
                expectRefused(outcome, status: 1, ["pool.json", phrase], "\(command) with a \(kind) pool.json")
            }
            let create = try CrashKit.provideo(pool, ["create", "--capacity", "16M"])
            expectRefused(create, status: 1, ["already exists"], "create over a pool with a \(kind) pool.json")
            #expect(CrashKit.snapshot(pool) == before, "a command changed the pool with a \(kind) pool.json")
            #expect(!CrashKit.exists(dir + "/take.mov"))
            do {
                _ = try Pool.open(at: pool)
                Issue.record("Pool.open accepted a \(kind) pool.json")
            } catch let error as ProVideoError {
                #expect(error.code == .corruptState, "\(kind): \(error.code)")
            }
        }
    }

    /// An empty pool path (`--pool ""`, `--pool=`, e.g. from an unset shell variable) is a
    /// usage error: it must not silently mean the current directory (where `create` would
    /// scatter pool files and `destroy` would remove the directory itself).
    @Test(arguments: [["--pool", ""], ["--pool="]])
    func emptyPoolPath(_ poolArguments: [String]) throws {
        try TestSupport.withScratch("badinput-emptypool") { dir in
            let cwd = dir + "/cwd"
            try FileManager.default.createDirectory(atPath: cwd, withIntermediateDirectories: false)
            try Data("keep\n".utf8).write(to: URL(fileURLWithPath: cwd + "/existing.txt"))
            let before = CrashKit.snapshot(cwd)
            for command in [["create", "--capacity", "16M"], ["status"], ["destroy"]] {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: TestSupport.provideoPath)
                process.arguments = poolArguments + command
                process.currentDirectoryURL = URL(fileURLWithPath: cwd)
                var environment = ProcessInfo.processInfo.environment
                environment.removeValue(forKey: "PROVIDEO_POOL")
                process.environment = environment
                let errors = Pipe()
                process.standardOutput = Pipe()
                process.standardError = errors
                try process.run()
                let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                process.waitUntilExit()
                #expect(process.terminationStatus == 2, "provideo \(poolArguments) \(command) in \(cwd): exit \(process.terminationStatus): \(message)")
                #expect(CrashKit.exists(cwd), "provideo \(poolArguments) \(command) removed the current directory")
                #expect(CrashKit.snapshot(cwd) == before, "provideo \(poolArguments) \(command) changed the current directory: \(CrashKit.contents(cwd))")
                if !CrashKit.exists(cwd) { try FileManager.default.createDirectory(atPath: cwd, withIntermediateDirectories: false) }
                if CrashKit.exists(cwd + "/pool.json") { _ = try? CrashKit.provideo(cwd, ["destroy"]) }
                if !CrashKit.exists(cwd) { try FileManager.default.createDirectory(atPath: cwd, withIntermediateDirectories: false) }
                if !CrashKit.exists(cwd + "/existing.txt") { try Data("keep\n".utf8).write(to: URL(fileURLWithPath: cwd + "/existing.txt")) }
            }
        }
    }
}

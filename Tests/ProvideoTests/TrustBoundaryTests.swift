import Foundation
import Glibc
import TestSupport
import Testing
@testable import ProVideoStorage

/// The trust boundary (issue 23, Docs/SECURITY.md): root services act for a pool's members, and
/// a member who swaps a path, plants a link in the pool or edits a note never turns them against
/// the machine. Each case is the exact swap a hostile member made; each checks a root-owned
/// canary (content, mode, owner, mtime), that nothing was made where the take's owner could not
/// write, and that the take is either where it should be, byte for byte, or held in the pool.
@Suite(.serialized, .enabled(if: TestSupport.isRoot, "needs root: users, groups and root services"))
struct TrustBoundaryTests {
    typealias Users = AccessTests

    /// A root-owned file outside the pool that no case may change.
    struct Canary {
        let path: String
        let bytes: [UInt8]
        let stat: String

        init(_ path: String) throws {
            self.path = path
            bytes = Array("root's own file: never written by the pool\n".utf8)
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            try TestSupport.shell("chown root:root '\(path)' && chmod 600 '\(path)' && touch -d '2020-01-01 00:00' '\(path)'")
            stat = try Self.describe(path)
        }

        static func describe(_ path: String) throws -> String { try TestSupport.shell("stat -c '%U:%G %a %s %Y %h' '\(path)'") }

        func expectUnchanged(_ context: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            #expect(TestSupport.fileEquals(path, bytes), "\(context): the canary's bytes changed",
                    sourceLocation: sourceLocation)
            #expect(try Self.describe(path) == stat, "\(context): the canary's owner, mode, size or mtime changed",
                    sourceLocation: sourceLocation)
        }
    }

    /// A pool for the group (made by its administrator), a member's home with `out/`, a directory
    /// only root may enter holding a canary, and `provideo` runnable by everyone.
    struct World {
        let scratch: String, binary: String, pool: String, home: String, out: String, rootOnly: String
        let canary: Canary

        func provideo(_ arguments: String..., stdin: [UInt8]? = nil) throws -> TestSupport.ProcessResult {
            try TestSupport.run(binary, ["--pool", pool] + arguments, stdin: stdin.map { Data($0) })
        }

        func asMember(_ arguments: [String], stdin: [UInt8]? = nil) throws -> TestSupport.ProcessResult {
            try Users.provideo(as: Users.recorder, binary, ["--pool", pool] + arguments, stdin: stdin)
        }

        /// The member records `input` to `destination` and is killed once all of it is committed.
        func memberRecordsAndIsKilled(_ destination: String, _ input: [UInt8]) throws {
            try CrashKit.killRecorderAfterCommit(pool, destination, input, as: Users.recorder, binary: binary)
        }

        func heldRecordings() throws -> [HeldRecording] { try TestSupport.poolListing(pool).recordings }
    }

    static func withWorld(_ body: (World) throws -> Void) throws {
        try Users.withUsers { scratch, binary in
            let pool = scratch + "/pool"
            let result = try Users.provideo(as: Users.admin, binary, ["--pool", pool, "create", "--capacity", "24M",
                                                                      "--group", Users.group, "--bandwidth", "1G"])
            try #require(result.status == 0, "create: \(result.stderr)")
            defer { TestSupport.removeTree(pool) }
            let home = scratch + "/home", out = home + "/out", rootOnly = scratch + "/root-only"
            try TestSupport.shell("mkdir -m 755 '\(home)' '\(out)' && chown -R \(Users.recorder): '\(home)' && "
                                  + "mkdir -m 700 '\(rootOnly)'")
            let world = World(scratch: scratch, binary: binary, pool: pool, home: home, out: out, rootOnly: rootOnly,
                              canary: try Canary(rootOnly + "/canary"))
            try body(world)
        }
    }

    /// Case 1: the member swaps its directory for a link to a root-only one, then its recorder
    /// dies. A root `status` places nothing; a root `recover` keeps the take in the pool, the
    /// member's; put back, the take moves there, the member's.
    @Test func salvageNeverFollowsASwappedDirectory() throws {
        try Self.withWorld { world in
            let input = TestSupport.pattern(900_001, seed: 23)
            try world.memberRecordsAndIsKilled(world.out + "/take.mov", input)
            try TestSupport.shell("mv '\(world.out)' '\(world.out).real' && ln -s '\(world.rootOnly)' '\(world.out)'")

            let status = try world.provideo("status")
            #expect(status.status == 0 && status.stderr.contains("wait to be salvaged"), "status: \(status)")
            #expect(TestSupport.hasCapture(world.pool), "a read-only status salvaged the capture")
            let recover = try world.provideo("recover")
            #expect(recover.status == 0, "recover: \(recover)")
            #expect(CrashKit.contents(world.rootOnly) == ["canary"], "root placed a take in \(world.rootOnly)")
            try world.canary.expectUnchanged("after recover")
            let held = try #require(try world.heldRecordings().first, "the take is not held in the pool")
            #expect(TestSupport.fileEquals(held.path, input))
            #expect(try Users.owner(held.path).user == Users.recorder, "the held take is not the recorder's")

            try TestSupport.shell("rm '\(world.out)' && mv '\(world.out).real' '\(world.out)'")
            let move = try world.provideo("move", held.path)
            #expect(move.status == 0, "move: \(move)")
            #expect(TestSupport.fileEquals(world.out + "/take.mov", input))
            #expect(try Users.owner(world.out + "/take.mov").user == Users.recorder)
        }
    }

    /// Case 1b: the member loses write access to its directory before the salvage: root does not
    /// write there for it.
    @Test func salvageRespectsTheRecordersPermissions() throws {
        try Self.withWorld { world in
            let input = TestSupport.pattern(300_007, seed: 5)
            try world.memberRecordsAndIsKilled(world.out + "/take.mov", input)
            try TestSupport.shell("chmod 555 '\(world.out)'")
            let recover = try world.provideo("recover")
            #expect(recover.status == 0, "recover: \(recover)")
            #expect(CrashKit.contents(world.out).isEmpty, "root wrote into a directory its recorder may not write")
            let held = try #require(try world.heldRecordings().first)
            #expect(held.reason.contains(Users.recorder), "the reason does not say whose permission: \(held.reason)")
            #expect(TestSupport.fileEquals(held.path, input))
            #expect(try Users.owner(held.path).user == Users.recorder)
        }
    }

    /// Case 5: a link planted at each of a dead capture's files, at the capture's directory, and
    /// at the pool's `spare` and `reserve`: root's status, recover, replenish and resize refuse
    /// it, name it, and touch nothing outside the pool.
    @Test(arguments: ["data", "progress", "commit", "capture.json", "<directory>", "spare", "reserve"])
    func plantedLinksInThePoolAreRefused(_ file: String) throws {
        try Self.withWorld { world in
            let victim = world.rootOnly + "/victim"
            let victimCanary = try Canary(victim)
            if file == "spare" || file == "reserve" {
                try TestSupport.shell("cd '\(world.pool)' && rm -f \(file) && ln -s '\(victim)' \(file)")
            } else {
                try world.memberRecordsAndIsKilled(world.out + "/take.mov", TestSupport.pattern(200_000, seed: 3))
                let capture = TestSupport.onlyCapture(world.pool)
                if file == "<directory>" {
                    // The member renames the capture's directory away and plants a link to a
                    // directory of root's whose files carry the capture's names.
                    try TestSupport.shell("mv '\(capture)' '\(world.pool)/moved' && ln -s '\(world.rootOnly)' '\(capture)' && "
                                          + "cp -p '\(victim)' '\(world.rootOnly)/data'")
                } else {
                    try TestSupport.shell("cd '\(capture)' && rm -f \(file) && ln -s '\(victim)' \(file)")
                }
            }
            for command in [["status"], ["list"], ["check"], ["recover"], ["replenish"], ["resize", "20M"], ["status"]] {
                let result = try TestSupport.run(world.binary, ["--pool", world.pool] + command)
                // A clear answer (done, or refused with a reason), never a crash or a hang.
                #expect(result.status == 0 || (result.status == 1 && !result.stderr.isEmpty), "\(command): \(result)")
                try victimCanary.expectUnchanged("\(file): \(command)")
                try world.canary.expectUnchanged("\(file): \(command)")
            }
            if file == "<directory>" {
                try victimCanary.expectUnchanged("data")
                #expect(TestSupport.fileEquals(world.rootOnly + "/data", victimCanary.bytes))
            }
            #expect(!FileManager.default.fileExists(atPath: world.out + "/take.mov") || file != "data",
                    "a take was made from a linked data file")
        }
    }

    /// Case 4: a held recording's note is group-writable. Its `path` pointed at root's file and
    /// its `destination` at a root-only directory; its `length` shortened: root's move and land
    /// never copy that file, never delete it, never publish a truncated take.
    @Test func heldNotesAreNotTrusted() throws {
        try Self.withWorld { world in
            let input = TestSupport.pattern(400_003, seed: 11)
            try world.memberRecordsAndIsKilled(world.out + "/take.mov", input)
            try TestSupport.shell("mv '\(world.out)' '\(world.out).away'")
            #expect(try world.provideo("recover").status == 0)
            try TestSupport.shell("mv '\(world.out).away' '\(world.out)'")
            let held = try #require(try world.heldRecordings().first)
            let notePath = held.path + ".json"
            func editNote(_ change: (inout [String: Any]) -> Void) throws {
                var note = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: notePath))) as! [String: Any]
                change(&note)
                try JSONSerialization.data(withJSONObject: note).write(to: URL(fileURLWithPath: notePath))
            }

            try editNote { $0["path"] = world.canary.path; $0["destination"] = world.rootOnly + "/stolen" }
            var result = try world.provideo("move", held.path)
            #expect(result.status == 1, "move into a root-only directory for the member: \(result)")
            try editNote { $0["landing"] = true }
            result = try world.provideo("land", "--retry", "0.1")
            #expect(CrashKit.contents(world.rootOnly) == ["canary"], "root wrote for the member in \(world.rootOnly)")
            try world.canary.expectUnchanged("note path and destination edited")
            #expect(TestSupport.fileEquals(held.path, input), "the held take changed")

            try editNote { $0["destination"] = world.out + "/take.mov"; $0["length"] = 1000; $0["landing"] = nil }
            result = try world.provideo("move", held.path)
            #expect(result.status == 1 && result.stderr.contains("its note says 1000"), "a short note: \(result)")
            #expect(!FileManager.default.fileExists(atPath: world.out + "/take.mov"), "a truncated take was published")
            #expect(TestSupport.fileEquals(held.path, input), "the held take changed")

            try editNote { $0["length"] = input.count }
            result = try world.provideo("move", held.path)
            #expect(result.status == 0, "move with an honest note: \(result)")
            #expect(TestSupport.fileEquals(world.out + "/take.mov", input))
            #expect(try Users.owner(world.out + "/take.mov").user == Users.recorder)
        }
    }

    /// Forged owners (found by an attack on this suite's first version): a member moves a file
    /// of the pool's owner whose bytes the group may write (`spare`) into `recordings/` with a
    /// note, or moves a directory of the owner's into `captures/` with that file as its `data`
    /// and a journal. Root's land, move and recover never act as the pool's owner for it: nothing
    /// appears in a directory only the owner may write, or only root may.
    @Test(arguments: ["held", "capture"])
    func aPoolFileMovedInIsNeverActedOnAsItsOwner(_ shape: String) throws {
        try Self.withWorld { world in
            let ownersOnly = world.scratch + "/admin-home"
            try TestSupport.shell("mkdir -m 755 '\(ownersOnly)' && chown \(Users.admin): '\(ownersOnly)'")
            // Directories of the owner's, as the pool makes them (2770).
            let made = try Users.provideo(as: Users.admin, "/bin/sh", ["-c", "cd '\(world.pool)' && mkdir -p recordings captures "
                                                                        + "&& chmod 2770 recordings captures"])
            try #require(made.status == 0, "\(made)")
            let spareSize = try TestSupport.statSizes(world.pool + "/spare").size
            let payload = "* * * * * root id > /tmp/owned\n"
            let member = { (command: String) throws -> TestSupport.ProcessResult in
                try Users.provideo(as: Users.recorder, "/bin/sh", ["-c", "cd '\(world.pool)' && " + command])
            }
            var result = try member("printf '\(payload)' | dd of=spare conv=notrunc status=none")
            try #require(result.status == 0, "\(result)")
            for destination in [world.rootOnly + "/pwned", ownersOnly + "/pwned"] {
                if shape == "held" {
                    result = try member("mv spare recordings/evil && printf '%s' '{\"path\":\"x\",\"destination\":"
                                        + "\"\(destination)\",\"length\":\(spareSize),\"reason\":\"r\",\"landing\":true}'"
                                        + " > recordings/evil.json")
                    try #require(result.status == 0, "\(result)")
                    _ = try world.provideo("land", "--retry", "0.1")
                    _ = try world.provideo("move", world.pool + "/recordings/evil")
                    _ = try member("mv recordings/evil spare && rm recordings/evil.json")
                } else {
                    result = try member("mv recordings captures/evil && mkdir recordings && mv spare captures/evil/data && "
                                        + "printf '%s' '{\"id\":\"evil\",\"destination\":\"\(destination)\",\"alignment\":512,"
                                        + "\"bitrate\":1,\"engine\":\"\",\"phase\":\"recording\",\"startedAt\":0,\"pid\":1}'"
                                        + " > captures/evil/capture.json")
                    try #require(result.status == 0, "\(result)")
                    try CaptureJournalRecord.write(world.pool + "/captures/evil/commit", length: 64)
                    _ = try world.provideo("recover")
                    _ = try member("mv captures/evil/data spare && rm -f captures/evil/* && rmdir recordings && "
                                   + "mv captures/evil recordings")
                }
                #expect(!FileManager.default.fileExists(atPath: destination), "root acted as the pool's owner: \(destination)")
            }
            try world.canary.expectUnchanged("forged \(shape)")
            #expect(CrashKit.contents(ownersOnly).isEmpty, "the owner's directory: \(CrashKit.contents(ownersOnly))")
        }
    }

    /// The same swaps against the landing service as it runs (`land --watch`, as root): a note
    /// edited to aim a take at a root-only directory, and a member's file hard-linked at the
    /// temporary name. The service writes nothing there, changes neither file, and the take
    /// lands once its note is honest.
    @Test func theLandingServiceHoldsTheSameRules() throws {
        try Self.withWorld { world in
            try LoopFilesystem.with("tmpfs", megabytes: 64) { tmp in
                let directory = tmp.mountPoint + "/landing"
                try TestSupport.shell("chmod 755 \"$(dirname '\(tmp.mountPoint)')\" && chmod 1777 '\(tmp.mountPoint)' && "
                                      + "mkdir -m 755 '\(directory)' && chown \(Users.recorder) '\(directory)'")
                let bytes = TestSupport.pattern(300_001, seed: 12)
                let destination = directory + "/take.mov"
                // The member plants its own file's hard link at the temporary name before the
                // service starts (started earlier, it may land the take before the link is there).
                let precious = directory + "/precious.txt", preciousBytes = Array("the member's other file\n".utf8)
                try Data(preciousBytes).write(to: URL(fileURLWithPath: precious))
                try TestSupport.shell("chown \(Users.recorder) '\(precious)'")
                let recorded = try world.asMember(["record", destination, "--land", "background"], stdin: bytes)
                try #require(recorded.status == 0, "record: \(recorded.stderr)")
                let held = try #require(try world.heldRecordings().first)
                let partial = RecordingCopy.temporaryPath(for: destination, tag: FileSystem.lastComponent(of: held.path))
                try TestSupport.shell("ln '\(precious)' '\(partial)'")
                let watch = try TestSupport.start(world.binary, ["--pool", world.pool, "land", "--watch", "--interval", "0.2",
                                                                 "--retry", "0.1"])
                defer {
                    kill(watch.processIdentifier, SIGKILL)
                    watch.waitUntilExit()
                }
                var landed = false
                for _ in 0..<100 where !landed {
                    usleep(100_000)
                    landed = TestSupport.fileEquals(destination, bytes)
                }
                #expect(landed, "the service did not land the take")
                // A take of the member's whose note aims it at a root-only directory.
                let forged = world.pool + "/recordings/forged-take.mov"
                try TestSupport.shell("cp -p '\(destination)' '\(forged)' && chown \(Users.recorder) '\(forged)' && "
                                      + "chmod 644 '\(forged)'")
                try Data(#"{"path":"x","destination":"\#(world.rootOnly)/stolen","length":\#(bytes.count),"reason":"r","landing":true}"#.utf8)
                    .write(to: URL(fileURLWithPath: forged + ".json"))
                usleep(1_500_000)
                #expect(TestSupport.fileEquals(forged, bytes), "the forged take was not kept")
                #expect(TestSupport.fileEquals(precious, preciousBytes), "the service wrote through the planted hard link")
                #expect(try Users.owner(destination).user == Users.recorder)
                try world.canary.expectUnchanged("land --watch")
                #expect(CrashKit.contents(world.rootOnly) == ["canary"])
            }
        }
    }

    /// A flood of entries in `captures/` is refused at once, before any work on them.
    @Test func aFloodOfCapturesIsRefused() throws {
        try Self.withWorld { world in
            _ = try Users.provideo(as: Users.recorder, "/bin/sh", ["-c", "mkdir -p '\(world.pool)/captures' && cd "
                                                                    + "'\(world.pool)/captures' && seq 1 16400 | xargs mkdir"])
            let status = try CrashKit.run(world.binary, ["--pool", world.pool, "status"])
            #expect(status.reason == .exit && status.status == 1 && status.stderr.contains("more than a pool ever makes"),
                    "\(status)")
        }
    }

    /// Takes of the member's waiting to land on another filesystem, made by copying one landing
    /// take (and its note) `count` times.
    static func landingTakes(_ world: World, to directory: String, count: Int, bytes: [UInt8],
                             named name: String = "") throws -> [String] {
        let seedDestination = directory + "/\(name)seed.mov"
        let result = try world.asMember(["record", seedDestination, "--land", "background"], stdin: bytes)
        try #require(result.status == 0, "record: \(result.stderr)")
        let seed = try #require(try world.heldRecordings().first { $0.destination == seedDestination })
        var destinations: [String] = []
        for index in 0..<count {
            let held = world.pool + "/recordings/\(name)copy\(index)-take.mov"
            let destination = directory + "/\(name)take\(index).mov"
            try TestSupport.shell("cp -p '\(seed.path)' '\(held)'")
            var note = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: seed.path + ".json")))
                as! [String: Any]
            note["path"] = held
            note["destination"] = destination
            try JSONSerialization.data(withJSONObject: note).write(to: URL(fileURLWithPath: held + ".json"))
            destinations.append(destination)
        }
        return destinations
    }

    /// Case 3: a hard link to another of the member's files, planted at the predictable
    /// temporary name: the landing never writes into it, and the take lands whole.
    @Test func plantedHardLinkAtThePartialIsNeverWrittenThrough() throws {
        try Self.withWorld { world in
            try LoopFilesystem.with("tmpfs", megabytes: 64) { tmp in
                let directory = tmp.mountPoint + "/landing"
                try TestSupport.shell("chmod 755 \"$(dirname '\(tmp.mountPoint)')\" && chmod 1777 '\(tmp.mountPoint)' && mkdir -m 755 '\(directory)' && chown \(Users.recorder) '\(directory)'")
                let bytes = TestSupport.pattern(500_001, seed: 8)
                let destination = directory + "/take.mov"
                let result = try world.asMember(["record", destination, "--land", "background"], stdin: bytes)
                try #require(result.status == 0, "record: \(result.stderr)")
                let held = try #require(try world.heldRecordings().first)
                let precious = directory + "/precious.txt", preciousBytes = Array("the member's other file\n".utf8)
                try Data(preciousBytes).write(to: URL(fileURLWithPath: precious))
                let partial = RecordingCopy.temporaryPath(for: destination, tag: FileSystem.lastComponent(of: held.path))
                try TestSupport.shell("chown \(Users.recorder) '\(precious)' && ln '\(precious)' '\(partial)'")
                let land = try world.provideo("land", "--retry", "0.1")
                #expect(land.status == 0, "land: \(land)")
                #expect(TestSupport.fileEquals(precious, preciousBytes), "the landing wrote through the planted hard link")
                #expect(TestSupport.fileEquals(destination, bytes), "the take did not land whole")
                #expect(try Users.owner(destination).user == Users.recorder)
            }
        }
    }

    /// The swaps the racer must get in before the race counts as run.
    static let racedSwapsWanted = 10

    /// Case 2: a racer (the member) replaces each temporary file with a link to root's file as
    /// soon as it appears, over rounds of 200 landings. No take is reported landed unless its
    /// destination is the verified copy; every other take stays held, whole; root's file is
    /// unchanged. On a busy machine a round can pass before the racer gets a swap in (0 swaps in
    /// 200 landings once): rounds go on until it has swapped `racedSwapsWanted` temporaries, for
    /// at most 3 minutes; a run where it never could is skipped, saying so (the race was not
    /// run), not failed.
    @Test func racedPartialsNeverLandAsTheRacersLink() throws {
        try Self.withWorld { world in
            try LoopFilesystem.with("tmpfs", megabytes: 96) { tmp in
                let directory = tmp.mountPoint + "/landing"
                try TestSupport.shell("chmod 755 \"$(dirname '\(tmp.mountPoint)')\" && chmod 1777 '\(tmp.mountPoint)' && mkdir -m 755 '\(directory)' && chown \(Users.recorder) '\(directory)'")
                let bytes = TestSupport.pattern(64 << 10, seed: 4)
                let began = MonotonicTime.now(), limit: UInt64 = 180_000_000_000
                var swaps: [Int] = []
                repeat {
                    swaps.append(try Self.racedRound(world, directory: directory, bytes: bytes, round: swaps.count + 1))
                } while swaps.reduce(0, +) < Self.racedSwapsWanted && MonotonicTime.now() - began < limit
                let total = swaps.reduce(0, +)
                if total < Self.racedSwapsWanted {
                    // A skip, not a pass and not a product failure: every round's checks above
                    // held, but the racer was too slow to swap enough temporaries to test them.
                    let why = "the racer swapped \(total) temporaries in \(swaps.count) rounds of 200 landings "
                        + "(\(swaps)) within \((MonotonicTime.now() - began) / 1_000_000_000) s, fewer than "
                        + "\(Self.racedSwapsWanted): the race was not run"
                    try Test.cancel("\(why)")
                }
            }
        }
    }

    /// One round of the race: 200 takes landed while the racer swaps their temporaries (started
    /// once it watches the directory), every result checked, then the racer's links removed and
    /// every take landed whole. Returns the racer's swaps.
    static func racedRound(_ world: World, directory: String, bytes: [UInt8], round: Int) throws -> Int {
        let destinations = try Self.landingTakes(world, to: directory, count: 200, bytes: bytes, named: "r\(round)-")
        let stop = world.scratch + "/stop-racer-\(round)", ready = world.scratch + "/racer-ready-\(round)"
        let racer = try TestSupport.start("/usr/bin/setpriv", [
            "--reuid=\(Users.recorder)", "--regid=\(Users.recorder)", "--init-groups", "/usr/bin/python3", "-c",
            Self.racerScript, directory, world.canary.path, "60", stop, ready])
        defer {
            if racer.isRunning { kill(racer.processIdentifier, SIGKILL) }
            racer.waitUntilExit()
        }
        // The landing starts once the racer has listed the directory (a python start on a busy
        // machine outlasted the 0.2 s this waited before, and a whole landing).
        for _ in 0..<3000 where racer.isRunning && !FileManager.default.fileExists(atPath: ready) { usleep(10_000) }
        try #require(FileManager.default.fileExists(atPath: ready), "the racer did not start within 30 s")
        let land = try world.provideo("land", "--retry", "0.1", "--json")
        _ = FileManager.default.createFile(atPath: stop, contents: nil)
        racer.waitUntilExit()
        let swaps = Int(String(decoding: (racer.standardOutput as! Pipe).fileHandleForReading.readDataToEndOfFile(),
                               as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        let results = try JSONSerialization.jsonObject(with: Data(land.stdout.utf8)) as? [[String: Any]] ?? []
        #expect(results.count >= 200, "round \(round): land tried \(results.count) takes: \(land.stderr)")
        var landed = 0
        for result in results {
            let destination = result["destination"] as? String ?? ""
            let path = result["path"] as? String ?? ""
            if result["landed"] as? Bool == true {
                landed += 1
                var st = stat()
                #expect(lstat(destination, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG,
                        "\(destination) was reported landed but is not a regular file")
                #expect(TestSupport.fileEquals(destination, bytes), "\(destination) reported landed, not the take")
                #expect(!FileManager.default.fileExists(atPath: path), "the pool kept a landed take")
            } else {
                #expect(TestSupport.fileEquals(path, bytes), "\(path) was not landed and is not kept whole")
                let reason = result["error"] as? String ?? ""
                #expect(reason.contains("not the verified copy") || reason.contains("already exists"),
                        "\(path) stays held without saying why: \(reason)")
            }
        }
        #expect(destinations.count == 200)
        try world.canary.expectUnchanged("after 200 raced landings, round \(round) (\(swaps) swaps, \(landed) landed)")

        // The racer gone and its links removed, every held take lands, whole and the member's.
        try TestSupport.shell("find '\(directory)' -type l -delete")
        let again = try world.provideo("land", "--retry", "0.1")
        #expect(again.status == 0, "round \(round): land after the race: \(again.stderr)")
        for destination in destinations {
            #expect(TestSupport.fileEquals(destination, bytes), "\(destination) did not land after the race")
        }
        #expect(try world.heldRecordings().isEmpty, "round \(round): takes still held after the race")
        return swaps
    }

    /// Replaces every `*.partial` in a directory with a symbolic link to a target, until a stop
    /// file appears or for N seconds (a signal may be blocked in a child of a test's thread);
    /// creates a ready file once it has listed the directory; prints how many it replaced.
    static let racerScript = """
        import os, sys, time
        directory, target, seconds, stop, ready = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4], sys.argv[5]
        swaps = 0
        listed = False
        end = time.time() + seconds
        while time.time() < end and not os.path.exists(stop):
            for name in os.listdir(directory):
                if name.endswith('.partial') and not os.path.islink(os.path.join(directory, name)):
                    link = os.path.join(directory, '.racer-' + name)
                    try:
                        os.symlink(target, link)
                        os.rename(link, os.path.join(directory, name))
                        swaps += 1
                    except OSError:
                        pass
            if not listed:
                open(ready, 'w').close()
                listed = True
        print(swaps, flush=True)
        """
}

/// The commit file of a planted capture: both records claiming `length` bytes, as a recorder
/// writes them (`CaptureJournal.commitRecord`).
enum CaptureJournalRecord {
    static func write(_ path: String, length: UInt64) throws {
        var bytes = [UInt8](repeating: 0, count: 1024)
        bytes.withUnsafeMutableBytes { buffer in
            for slot in CaptureJournal.commitSlots.map({ Int($0) }) {
                CaptureJournal.commitRecord(Int64(bitPattern: length), into: UnsafeMutableRawBufferPointer(
                    rebasing: buffer[slot..<slot + CaptureJournal.commitRecordLength]))
            }
        }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }
}

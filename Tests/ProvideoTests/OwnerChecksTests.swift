import Foundation
import Glibc
import TestSupport
import Testing
@testable import ProVideoStorage

/// The checks that decide whom root acts as (issue 38, Docs/SECURITY.md rule 1), each proven by
/// the attack it stops, built by a real member of the pool's group and run through root's real
/// `provideo`: a capture's `data` must be its directory owner's, a file acted on as its owner
/// must have one link, and a state file is sized before it is read.
@Suite(.serialized, .enabled(if: TestSupport.isRoot, "needs root: users, groups, sysctls and root services"))
struct OwnerChecksTests {
    typealias Users = AccessTests
    typealias World = TrustBoundaryTests.World

    /// Runs `command` with `sh -c` as the member, in the pool directory.
    static func member(_ world: World, _ command: String) throws -> TestSupport.ProcessResult {
        try Users.provideo(as: Users.recorder, "/bin/sh", ["-c", "cd '\(world.pool)' && " + command])
    }

    /// A directory only the pool's owner may write (mode 755, theirs), empty.
    static func ownersOnlyDirectory(_ world: World) throws -> String {
        let path = world.scratch + "/admin-home"
        try TestSupport.shell("mkdir -m 755 '\(path)' && chown \(Users.admin): '\(path)'")
        return path
    }

    /// The pool's `recordings/` and `captures/`, made by the pool's owner as the pool makes
    /// them (2770), so that a directory of the owner's is in the pool for the member to move.
    static func ownersPoolDirectories(_ world: World) throws {
        let made = try Users.provideo(as: Users.admin, "/bin/sh", ["-c", "cd '\(world.pool)' && mkdir -p recordings captures "
                                                                    + "&& chmod 2770 recordings captures"])
        try #require(made.status == 0, "\(made)")
        #expect(try Users.owner(world.pool + "/recordings").user == Users.admin)
    }

    /// A capture's journal aimed at `destination`, as a recorder writes it.
    static func journal(id: String, destination: String) -> String {
        #"{"id":"\#(id)","destination":"\#(destination)","alignment":512,"bitrate":1,"engine":"","phase":"recording","startedAt":0,"pid":1}"#
    }

    /// Mutation "a capture's data of another user than its directory's": the member renames the
    /// pool owner's `recordings/` (a directory of the owner's the group may write in, in a pool
    /// directory with no sticky bit) into `captures/` as a dead capture, and writes there its
    /// own `data` (0640, the member's: no one else could have written it, so the one-owner check
    /// alone passes), a journal aimed at a directory only the pool's owner may write, and a
    /// commit record claiming all of `data`. Were the capture's owner taken from its directory
    /// alone, root's `recover` would act as the pool's owner: give the member's bytes to the
    /// owner and rename them into the owner's directory. It refuses, naming both users, and
    /// leaves the file as it was, the member's.
    @Test func aMembersDataInAnOwnersDirectoryIsNeverPlacedAsTheOwner() throws {
        try TrustBoundaryTests.withWorld { world in
            let ownersOnly = try Self.ownersOnlyDirectory(world)
            try Self.ownersPoolDirectories(world)
            let destination = ownersOnly + "/pwned"
            // Bytes of the member's choosing, not a multiple of any allocation unit.
            let payload = Array("#!/bin/sh\n# the member's script, to run as the pool's owner\nid > /tmp/owned\n".utf8)
            try Data(payload).write(to: URL(fileURLWithPath: world.scratch + "/payload"))
            try CaptureJournalRecord.write(world.scratch + "/commit", length: UInt64(payload.count))
            try TestSupport.shell("chmod 644 '\(world.scratch)/payload' '\(world.scratch)/commit'")
            let planted = try Self.member(world, "mv recordings captures/evil && mkdir recordings && "
                                          + "(umask 027 && cat '\(world.scratch)/payload' > captures/evil/data) && "
                                          + "cp '\(world.scratch)/commit' captures/evil/commit && "
                                          + "printf '%s' '\(Self.journal(id: "evil", destination: destination))' "
                                          + "> captures/evil/capture.json")
            try #require(planted.status == 0, "\(planted)")
            let data = world.pool + "/captures/evil/data"
            #expect(try Users.owner(world.pool + "/captures/evil").user == Users.admin, "the capture's directory")
            let before = try Users.owner(data)
            #expect(before.user == Users.recorder && before.mode == "640", "the planted data: \(before)")

            let recover = try world.provideo("recover")
            #expect(recover.status == 1 && recover.stderr.contains("belongs to \(Users.recorder) but its capture to "
                                                                   + "\(Users.admin)"), "recover: \(recover)")
            #expect(!FileManager.default.fileExists(atPath: destination), "root placed the member's file as the pool's owner")
            #expect(CrashKit.contents(ownersOnly).isEmpty, "the owner's directory: \(CrashKit.contents(ownersOnly))")
            #expect(TestSupport.fileEquals(data, payload), "the planted data was not left as it was")
            let after = try Users.owner(data)
            #expect(after.user == Users.recorder && after.mode == "640", "the planted data changed hands: \(after)")
            try world.canary.expectUnchanged("a member's data in an owner's capture directory")
        }
    }

    /// Mutation "a file acted on as its owner with more than one link": where
    /// `fs.protected_hardlinks` is 0 a member may hard-link a file it cannot even read. It links
    /// a file of root's (0600) into `recordings/` with a note, as a held take whose killed move
    /// was going to a root-only directory, where root keeps a file at the very name that move's
    /// temporary would have. Root's `recover` (any salvaging open) forgets the killed move: were
    /// the take's owner taken from a file with two links, it would act as root and delete
    /// root's file. Root's `move` and `land` of that take refuse it too (its two links named),
    /// and nothing is placed, landed or copied.
    @Test func aHardLinkedFileIsNeverActedOnAsItsOwner() throws {
        try TrustBoundaryTests.withWorld { world in
            try TestSupport.withSysctl("/proc/sys/fs/protected_hardlinks", "0") {
                let rootsFiles = world.scratch + "/roots-files"
                let secretBytes = Array("root's secret: the member may not even read it\n".utf8)
                try TestSupport.shell("mkdir -m 755 '\(rootsFiles)'")
                let secret = rootsFiles + "/secret"
                try Data(secretBytes).write(to: URL(fileURLWithPath: secret))
                try TestSupport.shell("chmod 600 '\(secret)'")
                let held = world.pool + "/recordings/evil"
                try Self.ownersPoolDirectories(world)
                let linked = try Self.member(world, "ln '\(secret)' recordings/evil")
                try #require(linked.status == 0, "the member could not hard-link root's file: \(linked)")
                defer { try? FileManager.default.removeItem(atPath: held) }
                #expect(try TestSupport.shell("stat -c '%U %a %h' '\(held)'").trimmingCharacters(in: .whitespacesAndNewlines)
                        == "root 600 2", "the planted link")

                // Root's file at the name the killed move's temporary would have.
                let target = world.rootOnly + "/stolen"
                let victim = RecordingCopy.temporaryPath(for: target, tag: "evil")
                let victimCanary = try TrustBoundaryTests.Canary(victim)
                func note(movingTo: String?, destination: String, landing: Bool) throws {
                    var fields: [String: Any] = ["path": held, "destination": destination, "length": secretBytes.count,
                                                 "reason": "r", "landing": landing]
                    if let movingTo { fields["movingTo"] = movingTo }
                    let text = String(decoding: try JSONSerialization.data(withJSONObject: fields), as: UTF8.self)
                    let written = try Self.member(world, "printf '%s' '\(text)' > recordings/evil.json")
                    try #require(written.status == 0, "\(written)")
                }
                try note(movingTo: target, destination: world.out + "/take.mov", landing: false)
                let recover = try world.provideo("recover")
                #expect(recover.status == 0, "recover: \(recover)")
                try victimCanary.expectUnchanged("recover forgot a killed move as the linked file's owner")
                #expect(CrashKit.contents(world.rootOnly).sorted() == ["canary", FileSystem.lastComponent(of: victim)].sorted(),
                        "\(CrashKit.contents(world.rootOnly))")

                // Aimed at the member's own directory, and at root's: refused, nothing copied.
                for destination in [world.out + "/take.mov", world.rootOnly + "/stolen"] {
                    try note(movingTo: nil, destination: destination, landing: false)
                    let move = try world.provideo("move", held)
                    #expect(move.status == 1 && move.stderr.contains("2 hard links"), "move to \(destination): \(move)")
                    try note(movingTo: nil, destination: destination, landing: true)
                    let land = try world.provideo("land", "--retry", "0.1")
                    #expect(land.stderr.contains("2 hard links"), "land to \(destination): \(land)")
                    #expect(!FileManager.default.fileExists(atPath: destination), "root copied its file to \(destination)")
                }
                #expect(CrashKit.contents(world.out).isEmpty, "the member's directory: \(CrashKit.contents(world.out))")
                #expect(TestSupport.fileEquals(secret, secretBytes), "root's file changed")
                #expect(TestSupport.fileEquals(held, secretBytes), "the planted link is gone or changed")
                try victimCanary.expectUnchanged("move and land of a hard-linked file")
                try world.canary.expectUnchanged("a hard-linked file")
            }
        }
    }

    /// Mutation "a state file read before its size is checked": a member grows a dead
    /// capture's commit record (2 GiB) or its journal (1 TiB) in place, sparse. Root's `status`,
    /// `list` and `recover` answer at once, name the file and its real size, read none of it
    /// (its access time stays where it was set), and keep the capture as it is.
    @Test(arguments: [("commit", "2G", 2 << 30), ("capture.json", "1T", 1 << 40)])
    func aHugeStateFileIsRefusedBySizeUnread(_ file: String, _ size: String, _ bytes: Int) throws {
        try TrustBoundaryTests.withWorld { world in
            let input = TestSupport.pattern(200_003, seed: 38)
            try world.memberRecordsAndIsKilled(world.out + "/take.mov", input)
            let capture = TestSupport.onlyCapture(world.pool)
            let path = capture + "/" + file
            let grown = try Self.member(world, "truncate -s \(size) '\(path)' && touch -a -d '2020-01-01 00:00' '\(path)'")
            try #require(grown.status == 0, "\(grown)")
            #expect(try TestSupport.statSizes(path).size == UInt64(bytes))
            let accessed = { try TestSupport.shell("stat -c %X '\(path)'").trimmingCharacters(in: .whitespacesAndNewlines) }
            let accessedBefore = try accessed()
            // The scratch filesystem records reads: a control file read once shows a new time.
            let control = world.scratch + "/atime-control"
            try TestSupport.shell("echo x > '\(control)' && touch -a -d '2020-01-01 00:00' '\(control)'")
            let controlBefore = try TestSupport.shell("stat -c %X '\(control)'")
            _ = try TestSupport.shell("cat '\(control)'")
            try #require(try TestSupport.shell("stat -c %X '\(control)'") != controlBefore,
                         "the scratch filesystem does not record reads (noatime): what is read cannot be seen")

            let named = "\(path) is not a small regular file (\(bytes) bytes; at most \(FileSystem.smallFileLimit))"
            // The commands that only look do not open the capture's state: they say it waits.
            for command in [["status"], ["status", "--json"], ["list"], ["check"]] {
                let result = try CrashKit.run(world.binary, ["--pool", world.pool] + command)
                #expect(result.reason == .exit && result.stderr.contains("wait to be salvaged"), "\(command): \(result)")
                #expect(try accessed() == accessedBefore, "\(command) read the \(size) \(file)")
            }
            // The commands that salvage refuse it by its size, read none of it, keep the capture.
            let kept = file == "commit" ? "is left as it is" : "its \(input.count) committed bytes are kept"
            // `land` warns and goes on with its takes (exit 0); `recover` exits 1, naming it.
            for (command, status) in [(["land"], Int32(0)), (["recover"], Int32(1))] {
                let result = try CrashKit.run(world.binary, ["--pool", world.pool] + command)
                #expect(result.reason == .exit && result.status == status && result.stderr.contains(named)
                        && result.stderr.contains(kept), "\(command): \(result)")
                #expect(try accessed() == accessedBefore, "\(command) read the \(size) \(file)")
            }
            #expect(!FileManager.default.fileExists(atPath: world.out + "/take.mov"), "a take was placed from a huge \(file)")
            // Compared outside `#expect`: a failed array comparison is diffed in quadratic time.
            let committedKept = Array(TestSupport.readFile(capture + "/data").prefix(input.count)) == input
            #expect(committedKept, "the capture's committed bytes changed")
            #expect(try TestSupport.statSizes(path).size == UInt64(bytes), "the planted \(file) changed")
        }
    }
}

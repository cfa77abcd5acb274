import Foundation
import Glibc
import ProVideoStorage
import TestSupport
import Testing

/// The access model (issue 10, Docs/POOL-LAYOUT.md "Access"): an administrator creates a pool
/// for a group, recorder services of that group and root record into it in turn, and every
/// one of them can go on using it; a user outside the group is told which group to join and
/// can read nothing. Users and the group are created by the test and removed afterwards.
@Suite(.serialized, .enabled(if: TestSupport.isRoot, "needs root: loop filesystems, users and groups"))
struct AccessTests {
    // Named for this test process (`TestUsers`): another test process on the machine has its own.
    static let group = TestUsers.name("video")
    static let admin = TestUsers.name("admin")
    static let recorder = TestUsers.name("rec")
    static let outsider = TestUsers.name("out")
    private static let usersInUse = NSLock()

    /// Creates the group and users, a world-readable copy of `provideo` (the build directory
    /// may not be), and runs `body` with a scratch directory everyone can enter. Afterwards the
    /// users' processes are killed and the users and groups removed, even when `body` throws; a
    /// failure to remove them is this fixture's error.
    static func withUsers<T>(_ body: (_ scratch: String, _ provideo: String) throws -> T) throws -> T {
        // The users are one set for the whole test process: suites that use them take turns.
        usersInUse.lock()
        defer { usersInUse.unlock() }
        return try TestUsers.with(groups: [group], users: [(admin, [group]), (recorder, [group]), (outsider, [])]) {
            try withScratchForUsers(body)
        }
    }

    private static func withScratchForUsers<T>(_ body: (_ scratch: String, _ provideo: String) throws -> T) throws -> T {
        return try TestSupport.withScratch("access") { scratch in
            try TestSupport.shell("chmod 1777 \(scratch) && mkdir -m 1777 \(scratch)/out && mkdir -m 755 \(scratch)/bin && "
                                  + "cp \(TestSupport.productsDirectory)/provideo \(scratch)/bin/ && chmod 755 \(scratch)/bin/provideo")
            return try body(scratch, scratch + "/bin/provideo")
        }
    }

    /// Runs `provideo` as `user` (its own group and supplementary groups), umask 022.
    static func provideo(as user: String, _ binary: String, _ arguments: [String], stdin: [UInt8]? = nil) throws
        -> TestSupport.ProcessResult {
        try TestSupport.run("/usr/bin/setpriv", ["--reuid=\(user)", "--regid=\(user)", "--init-groups", binary] + arguments,
                            stdin: stdin.map { Data($0) })
    }

    static func owner(_ path: String) throws -> (user: String, group: String, mode: String) {
        let fields = try TestSupport.shell("stat -c '%U %G %a' '\(path)'").split(separator: " ")
        return (String(fields[0]), String(fields[1]), fields[2].trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Every file of the pool is the group's, 0660, every directory 2770.
    static func expectPoolModes(_ pool: String, _ context: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let listing = try TestSupport.shell("find '\(pool)' -printf '%y %g %m %p\\n'")
        for line in listing.split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 3)
            let expected = fields[0] == "d" ? "2770" : "660"
            #expect(fields[1] == Substring(group) && fields[2] == Substring(expected), "\(context): \(line)",
                    sourceLocation: sourceLocation)
        }
    }

    /// Root lands a recorder's take as that recorder: once the recorder has swapped its
    /// destination directory for a link to a directory only root may write, the landing fails
    /// and writes nothing there; put back, the take lands, byte for byte, and is the recorder's.
    @Test func landingActsAsTheRecorder() throws {
        try Self.withUsers { scratch, binary in
            try LoopFilesystem.with("tmpfs", megabytes: 64) { tmp in
                let pool = scratch + "/pool"
                var result = try Self.provideo(as: Self.admin, binary, ["--pool", pool, "create", "--capacity", "16M",
                                                                        "--group", Self.group, "--bandwidth", "1G"])
                try #require(result.status == 0, "create: \(result.stderr)")
                defer { _ = try? TestSupport.run(binary, ["--pool", pool, "destroy"]) }
                let mine = tmp.mountPoint + "/mine", rootOnly = tmp.mountPoint + "/root-only"
                try TestSupport.shell("chmod 755 \"$(dirname '\(tmp.mountPoint)')\" && chmod 1777 '\(tmp.mountPoint)' && "
                                      + "mkdir -m 755 '\(mine)' '\(rootOnly)' && "
                                      + "chown \(Self.recorder) '\(mine)'")
                let take = TestSupport.pattern(700_001, seed: 9)
                result = try Self.provideo(as: Self.recorder, binary, ["--pool", pool, "record", mine + "/take.mov",
                                                                       "--land", "background"], stdin: take)
                try #require(result.status == 0, "record: \(result.stderr)")
                // The recorder swaps its directory for a link to one only root may write.
                try TestSupport.shell("mv '\(mine)' '\(mine).real' && ln -s '\(rootOnly)' '\(mine)'")
                result = try TestSupport.run(binary, ["--pool", pool, "land", "--retry", "0.1"])
                #expect(result.status != 0, "root landed through the recorder's link: \(result.stdout)")
                #expect(CrashKit.contents(rootOnly).isEmpty, "the landing wrote into \(rootOnly): \(CrashKit.contents(rootOnly))")
                try TestSupport.shell("rm '\(mine)' && mv '\(mine).real' '\(mine)'")
                usleep(300_000)
                result = try TestSupport.run(binary, ["--pool", pool, "land", "--retry", "0.1"])
                #expect(result.status == 0, "land: \(result.stdout)\(result.stderr)")
                let landed = TestSupport.fileEquals(mine + "/take.mov", take)
                #expect(landed, "the take did not land whole")
                #expect(try Self.owner(mine + "/take.mov").user == Self.recorder)
            }
        }
    }

    @Test func adminRecordersAndRootShareOnePool() throws {
        try Self.withUsers { scratch, binary in
            let pool = scratch + "/pool"
            let out = scratch + "/out"
            func run(_ user: String, _ arguments: String..., stdin: [UInt8]? = nil) throws -> TestSupport.ProcessResult {
                try Self.provideo(as: user, binary, ["--pool", pool] + arguments, stdin: stdin)
            }
            var result = try run(Self.admin, "create", "--capacity", "16M", "--group", Self.group)
            try #require(result.status == 0, "create --group: \(result.stderr)")
            defer { _ = try? TestSupport.run(binary, ["--pool", pool, "destroy"]) }
            let directory = try Self.owner(pool)
            #expect(directory.user == Self.admin && directory.group == Self.group && directory.mode == "2770")
            try Self.expectPoolModes(pool, "after create")

            // Root records: the reserve it rebuilds is the pool's, the recording is root's.
            let takes = (1...3).map { TestSupport.pattern(600_000 + $0, seed: UInt64($0)) }
            result = try TestSupport.run(binary, ["--pool", pool, "record", out + "/root.mov"], stdin: Data(takes[0]))
            #expect(result.status == 0, "root record: \(result.stderr)")
            #expect(try Self.owner(out + "/root.mov").user == "root")
            let reserve = try Self.owner(pool + "/reserve")
            #expect(reserve.user == Self.admin && reserve.group == Self.group && reserve.mode == "660",
                    "the reserve root rebuilt: \(reserve)")
            try Self.expectPoolModes(pool, "after root recorded")

            // The administrator and a recorder service of the group go on using it.
            result = try run(Self.admin, "record", out + "/admin.mov", stdin: takes[1])
            #expect(result.status == 0, "admin record after root: \(result.stderr)")
            let adminTake = TestSupport.fileHolds(out + "/admin.mov", takes[1])
            #expect(adminTake, "admin.mov differs from its input")
            result = try run(Self.recorder, "record", out + "/recorder.mov", stdin: takes[2])
            #expect(result.status == 0, "recorder record: \(result.stderr)")
            let recorderTake = TestSupport.fileHolds(out + "/recorder.mov", takes[2])
            #expect(recorderTake, "recorder.mov differs from its input")
            for user in [Self.admin, Self.recorder] {
                for command in ["status", "check"] {
                    result = try run(user, command)
                    #expect(result.status == 0, "\(user) \(command): \(result.stderr)")
                }
            }
            try Self.expectPoolModes(pool, "after the recorder recorded")

            // Outside the group: a clear refusal naming the group, and nothing readable.
            result = try run(Self.outsider, "status")
            #expect(result.status == 1)
            #expect(result.stderr.contains("usermod -aG \(Self.group) \(Self.outsider)"), "\(result.stderr)")
            result = try Self.provideo(as: Self.outsider, "/bin/cat", [pool + "/reserve"])
            #expect(result.status != 0, "an outsider read the reserve")
            result = try Self.provideo(as: Self.outsider, binary, ["--pool", scratch + "/other", "create",
                                                                     "--capacity", "8M", "--group", Self.group])
            #expect(result.status == 1 && result.stderr.contains("not a member of group \(Self.group)"), "\(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: scratch + "/other"))

            result = try run(Self.recorder, "destroy")
            #expect(result.status == 1 && result.stderr.contains("only the pool's owner"), "member destroy: \(result.stderr)")
            result = try run(Self.admin, "destroy")
            #expect(result.status == 0, "admin destroy: \(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: pool))
        }
    }
}

import Foundation
import Glibc
import ProVideoStorage
import TestSupport
import Testing

/// No exhaustion wedges a pool (issue 10): space, then inodes, are used up on the pool's
/// filesystem (ext4 `-m 0`, so root has no reserved blocks to fall back on) or on a
/// destination's, before every step of a pool's life. Each step either works or fails with
/// exit 1 and a message; afterwards `status`, `list` and `check` work and the pool is
/// consistent; and once the resource is freed, the same step succeeds.
@Suite(.serialized, .enabled(if: TestSupport.isRoot, "needs root: loop filesystems, users and groups"))
struct ExhaustionTests {
    enum Resource: String, CaseIterable { case space, inodes }

    /// Uses up `resource` on the filesystem at `mount` with files under `mount/filler`.
    static func exhaust(_ resource: Resource, _ mount: String) throws {
        switch resource {
        case .space:
            try FS.fill(mount)
        case .inodes:
            let directory = mount + "/filler"
            try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            var index = 0
            while true {
                let fd = open("\(directory)/i\(index)", O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
                if fd < 0 {
                    try #require(errno == ENOSPC, "creating inode fillers failed with errno \(errno)")
                    return
                }
                close(fd)
                index += 1
            }
        }
    }

    /// Fills the filesystem at `mount` so that exactly `blocks` blocks stay free.
    static func fill(_ mount: String, leaving blocks: Int64) throws {
        let gap = mount + "/gap"
        let block = try TestSupport.freeSpace(mount).blockSize
        try TestSupport.shell("fallocate -l \(blocks * block) \(gap)")
        try FS.fill(mount)
        try FileManager.default.removeItem(atPath: gap)
    }

    static func release(_ mount: String) {
        TestSupport.removeTree(mount + "/filler")
    }

    /// `status`, `list` and `check` exit 0 and `check` finds nothing wrong.
    static func expectUsable(_ pool: String, _ context: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        for command in ["status", "list", "check"] {
            let result = try FS.provideo(pool, command)
            #expect(result.status == 0, "\(context): \(command) exit \(result.status): \(result.stderr)",
                    sourceLocation: sourceLocation)
        }
    }

    /// A step's result under exhaustion: 0, or 1 with a message (never a crash or a usage error).
    static func expectWorkedOrFailedCleanly(_ result: TestSupport.ProcessResult, _ context: String,
                                            sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(result.status == 0 || (result.status == 1 && result.stderr.hasPrefix("provideo: ")),
                "\(context): exit \(result.status): \(result.stderr)", sourceLocation: sourceLocation)
    }

    static func record(_ pool: String, _ destination: String, _ bytes: [UInt8]) throws -> TestSupport.ProcessResult {
        try FS.provideo(pool, "record", destination, "--bitrate", "80M", stdin: Data(bytes))
    }

    /// ext4 with space, then inodes, used up; XFS and btrfs with space used up (they allocate
    /// inodes on demand from free space, so running out of space is running out of inodes).
    @Test(arguments: [("ext4", Resource.space), ("ext4", .inodes), ("xfs", .space), ("btrfs", .space)])
    func everyStepWorksOrFailsCleanly(type: String, resource: Resource) throws {
        let (megabytes, options) = switch type {
        case "xfs": (320, "")
        // mkfs.btrfs refuses less than 109 MiB with separate data and metadata block groups
        // ("minimum size for each btrfs device is 114294784"); mixed ones (-M) fit in 96 MiB,
        // and there data and metadata run out together, as space and inodes do on XFS.
        case "btrfs": (96, "-M")
        default: (96, "-m 0 -N 96")
        }
        try LoopFilesystem.with(type, megabytes: megabytes, mkfsOptions: options) { fs in
            try LoopFilesystem.with("ext4", megabytes: 48, mkfsOptions: "-m 0 -N 64") { other in
                let pool = fs.mountPoint + "/pool"
                let out = fs.mountPoint + "/out"
                let away = other.mountPoint + "/out"
                try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
                try FileManager.default.createDirectory(atPath: away, withIntermediateDirectories: true)
                defer { FS.destroyQuietly(pool) }
                try steps(type, resource, fs.mountPoint, other.mountPoint, pool: pool, out: out, away: away)
            }
        }
    }

    private func steps(_ type: String, _ resource: Resource, _ mount: String, _ otherMount: String,
                       pool: String, out: String, away: String) throws {
        let take = TestSupport.pattern(1 << 20, seed: 7)
        defer { Self.release(mount); Self.release(otherMount) }

        // create on a nearly full filesystem: all of the free space less 2 KiB (field report:
        // it failed writing pool.json and left the whole reserve behind)
        let nearlyAll = try TestSupport.freeSpace(mount).available - 2048
        var nearFull = try FS.provideo(pool, "create", "--capacity", String(nearlyAll))
        Self.expectWorkedOrFailedCleanly(nearFull, "create near full")
        if nearFull.status == 0 {
            nearFull = try Self.record(pool, out + "/near.mov", take)
            #expect(nearFull.status == 0, "record into a pool that filled its filesystem: \(nearFull.stderr)")
            #expect(try FS.provideo(pool, "destroy").status == 0)
        } else {
            #expect(nearFull.stderr.contains("missing"), "the refusal says what is missing: \(nearFull.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: pool), "create near full left \(CrashKit.contents(pool))")
        // XFS frees a deleted file's blocks in the background (the create's direct-I/O probe
        // file) and keeps an inode chunk (64 inodes) it allocated for it.
        try TestSupport.shell("sync -f \(mount)")
        var keptSpace = try nearlyAll - TestSupport.freeSpace(mount).available
        for _ in 0..<40 where keptSpace > 64 << 10 {
            usleep(50_000)
            keptSpace = try nearlyAll - TestSupport.freeSpace(mount).available
        }
        #expect(keptSpace <= (type == "xfs" ? 64 << 10 : 0), "create near full kept \(keptSpace) bytes")

        // create
        try Self.exhaust(resource, mount)
        let refused = try FS.provideo(pool, "create", "--capacity", "8M")
        #expect(refused.status == 1 && refused.stderr.hasPrefix("provideo: "), "create: \(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: pool), "a failed create left \(CrashKit.contents(pool))")
        Self.release(mount)
        try FS.createPool(pool, capacity: "8M")
        try Self.expectUsable(pool, "after create")

        // record, finished by a rename on the pool's filesystem
        try Self.exhaust(resource, mount)
        var result = try Self.record(pool, out + "/a.mov", take)
        Self.expectWorkedOrFailedCleanly(result, "record (rename)")
        if result.status == 0 {
            let aLands = TestSupport.fileHolds(out + "/a.mov", take)
            #expect(aLands, "a.mov differs from its input")
        } else {
            #expect(!FileManager.default.fileExists(atPath: out + "/a.mov"))
            #expect(try TestSupport.poolStatus(pool).remainingCapacity == 8 << 20, "the reserve must stay whole")
            #expect(!TestSupport.hasCapture(pool), "a refused capture left capture/")
        }
        try Self.expectUsable(pool, "after record (rename)")
        Self.release(mount)
        result = try Self.record(pool, out + "/b.mov", take)
        #expect(result.status == 0, "record after release: \(result.stderr)")
        let bLands = TestSupport.fileHolds(out + "/b.mov", take)
        #expect(bLands, "b.mov differs from its input")

        if resource == .space {
            // A record started with a few blocks free: refused with the reserve whole, or recorded.
            for blocks: Int64 in [1, 2, 3, 4, 6] {
                let before = try TestSupport.poolStatus(pool).remainingCapacity
                try Self.fill(mount, leaving: blocks)
                result = try Self.record(pool, out + "/few\(blocks).mov", take)
                Self.expectWorkedOrFailedCleanly(result, "record with \(blocks) blocks free")
                if result.status == 1 {
                    let remaining = try TestSupport.poolStatus(pool).remainingCapacity
                    #expect(remaining == before, "\(blocks) blocks: reserve not whole (\(remaining) of \(before)): \(result.stderr)")
                    #expect(!TestSupport.hasCapture(pool), "\(blocks) blocks: capture/ left")
                }
                try Self.expectUsable(pool, "after a record with \(blocks) blocks free")
                Self.release(mount)
                try? FileManager.default.removeItem(atPath: out + "/few\(blocks).mov")
                _ = try FS.provideo(pool, "replenish")
            }

            // The filesystem fills while a recorder runs: what it records still lands whole.
            let recorder = try TestSupport.start("provideo", ["--pool", pool, "record", out + "/filling.mov",
                                                              "--durability", "0.2"], stdinPipe: true)
            let input = (recorder.standardInput as! Pipe).fileHandleForWriting
            try input.write(contentsOf: Data(take[0..<(take.count / 4)]))
            usleep(300_000)
            try Self.exhaust(resource, mount)
            try input.write(contentsOf: Data(take[(take.count / 4)...]))
            try input.close()
            recorder.waitUntilExit()
            let recorderError = String(decoding: (recorder.standardError as! Pipe).fileHandleForReading.readDataToEndOfFile(),
                                       as: UTF8.self)
            #expect(recorder.terminationStatus == 0, "a recorder on a filesystem that filled up failed: \(recorderError)")
            let fillingLands = TestSupport.fileHolds(out + "/filling.mov", take)
            #expect(fillingLands, "filling.mov differs from its input")
            try Self.expectUsable(pool, "after recording while the filesystem filled")
            Self.release(mount)
            _ = try FS.provideo(pool, "replenish")
        }

        // resize: a grow fails cleanly where space ran out (where inodes did, the spare's inode
        // is one for pool.json.tmp: it may work), a shrink always works on a full filesystem
        try Self.exhaust(resource, mount)
        result = try FS.provideo(pool, "resize", "16M")
        if resource == .space {
            #expect(result.status == 1 && result.stderr.hasPrefix("provideo: "), "grow: \(result.stderr)")
        } else {
            Self.expectWorkedOrFailedCleanly(result, "grow")
        }
        try Self.expectUsable(pool, "after a grow")
        result = try FS.provideo(pool, "resize", "4M")
        if resource == .space {
            #expect(result.status == 0, "a shrink must work on a full filesystem: \(result.stderr)")
        } else {
            Self.expectWorkedOrFailedCleanly(result, "shrink")
        }
        #expect(!FileManager.default.fileExists(atPath: pool + "/pool.json.tmp"))
        try Self.expectUsable(pool, "after shrink")
        Self.release(mount)
        result = try FS.provideo(pool, "resize", "8M")
        #expect(result.status == 0, "resize after release: \(result.stderr)")
        #expect(try TestSupport.poolStatus(pool).initialCapacity == 8 << 20)

        // replenish after a take used part of the reserve
        result = try Self.record(pool, out + "/c.mov", take)
        #expect(result.status == 0, "record: \(result.stderr)")
        try Self.exhaust(resource, mount)
        Self.expectWorkedOrFailedCleanly(try FS.provideo(pool, "replenish"), "replenish")
        try Self.expectUsable(pool, "after replenish")
        Self.release(mount)
        result = try FS.provideo(pool, "replenish")
        #expect(result.status == 0, "replenish after release: \(result.stderr)")
        #expect(try TestSupport.poolStatus(pool).remainingCapacity == 8 << 20)

        // record finished by a copy to a destination whose filesystem is exhausted: held
        try Self.exhaust(resource, otherMount)
        result = try Self.record(pool, away + "/d.mov", take)
        #expect(result.status == 1, "a copy to an exhausted filesystem: \(result.stderr)")
        let held = try TestSupport.poolListing(pool).recordings
        try #require(held.count == 1, "the recording must be held: \(result.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: away).isEmpty, "a partial copy was left")
        try Self.expectUsable(pool, "after a held recording")

        // move, with both filesystems exhausted, then the pool's alone, then neither
        try Self.exhaust(resource, mount)
        Self.expectWorkedOrFailedCleanly(try FS.provideo(pool, "move", held[0].path), "move (both exhausted)")
        try Self.expectUsable(pool, "after move (both exhausted)")
        Self.release(otherMount)
        result = try FS.provideo(pool, "move", held[0].path)
        if resource == .space && type == "ext4" {
            // The note's rewrite draws on the pool's spare: a full pool filesystem is when
            // recordings must be moved off it. (XFS needs a whole aligned inode chunk for the
            // note's new inode, which a full XFS may not have even with the spare released.)
            #expect(result.status == 0, "move off a full pool filesystem: \(result.stderr)")
        } else {
            Self.expectWorkedOrFailedCleanly(result, "move (pool exhausted)")
        }
        try Self.expectUsable(pool, "after move (pool exhausted)")
        Self.release(mount)
        if try TestSupport.poolListing(pool).recordings.count == 1 {
            result = try FS.provideo(pool, "move", held[0].path)
            #expect(result.status == 0, "move after release: \(result.stderr)")
        }
        let dLands = TestSupport.fileHolds(away + "/d.mov", take)
        #expect(dLands, "d.mov differs from its input")
        #expect(try TestSupport.poolListing(pool).recordings.isEmpty)

        // salvage of a killed recorder while the pool's filesystem is exhausted
        let recorder = try TestSupport.start("provideo", ["--pool", pool, "record", out + "/e.mov", "--durability", "0.2"],
                                             stdinPipe: true)
        let input = (recorder.standardInput as! Pipe).fileHandleForWriting
        try input.write(contentsOf: Data(take))
        let deadline = Date().addingTimeInterval(20)
        while CrashKit.committed(pool) < Int64(take.count) && Date() < deadline { usleep(50_000) }
        let committed = CrashKit.committed(pool)
        kill(recorder.processIdentifier, SIGKILL)
        recorder.waitUntilExit()
        try #require(committed == Int64(take.count), "the recorder never committed its input")
        try Self.exhaust(resource, mount)
        for command in ["status", "list"] {
            result = try FS.provideo(pool, command)
            #expect(result.status == 0, "\(command) with a dead capture on an exhausted filesystem: \(result.stderr)")
        }
        result = try FS.provideo(pool, "recover")
        Self.expectWorkedOrFailedCleanly(result, "recover (exhausted)")
        Self.release(mount)
        result = try FS.provideo(pool, "recover")
        #expect(result.status == 0, "recover after release: \(result.stderr)")
        let eLands = TestSupport.fileHolds(out + "/e.mov", take)
        #expect(eLands, "e.mov differs from its input")
        try Self.expectUsable(pool, "after salvage")
        #expect(try FS.provideo(pool, "check").stdout.contains("accounting matches"))
    }

    /// The spare gives its inode as well as its blocks: on an ext4 whose inodes are all used
    /// (and its space not), `set-bandwidth` still rewrites pool.json (a `.tmp` needs an inode),
    /// and the next command that opens the pool with inodes free makes the spare again. Seen
    /// in CI: a shrink on a full ext4 whose fillers had taken the last inodes could not record
    /// its new capacity.
    @Test func theSpareGivesItsInodeForAPoolFile() throws {
        try LoopFilesystem.with("ext4", megabytes: 48, mkfsOptions: "-m 0 -N 64") { fs in
            let pool = fs.mountPoint + "/pool"
            defer { Self.release(fs.mountPoint); FS.destroyQuietly(pool) }
            try FS.createPool(pool, capacity: "8M", options: ["--bandwidth", "200M"])
            try #require(FileManager.default.fileExists(atPath: pool + "/spare"), "create made no spare")
            try Self.exhaust(.inodes, fs.mountPoint)
            let set = try FS.provideo(pool, "set-bandwidth", "100M")
            #expect(set.status == 0, "set-bandwidth with no inode free: \(set.stderr)")
            #expect(try TestSupport.poolStatus(pool).bandwidth == 100_000_000)
            #expect(!FileManager.default.fileExists(atPath: pool + "/spare"), "the spare gave no inode")
            Self.release(fs.mountPoint)
            #expect(try FS.provideo(pool, "replenish").status == 0)
            #expect(FileManager.default.fileExists(atPath: pool + "/spare"), "the spare was not made again")
            try Self.expectUsable(pool, "after the spare came back")
        }
    }
}

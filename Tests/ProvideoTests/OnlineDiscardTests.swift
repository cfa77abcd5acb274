import Foundation
import ProVideoStorage
import TestSupport
import Testing

/// `create`, `status` (and `--json`) and `check` name the pool filesystem's online discard, what
/// it costs and the remedies, and how grants move the space (issue 64).
@Suite(.serialized, .enabled(if: TestSupport.isRoot, "needs root: loop devices and mounts"))
struct OnlineDiscardTests {
    @Test func theCommandsNameOnlineDiscardWhileTheMountHasIt() throws {
        try LoopFilesystem.with("ext4", megabytes: 128) { fs in
            try TestSupport.shell("umount \(fs.mountPoint) && mount -o discard \(fs.device) \(fs.mountPoint)")
            let pool = fs.mountPoint + "/pool"
            let created = try FS.provideo(pool, "create", "--capacity", "16M", "--bandwidth", "1G")
            #expect(created.status == 0, "\(created.stderr)")
            #expect(created.stdout.contains("grants: fallocate and cut"), "\(created.stdout)")
            #expect(created.stdout.contains("note: the pool's filesystem (ext4 at \(fs.mountPoint)) is mounted with online "
                                            + "discard"), "\(created.stdout)")
            defer { FS.destroyQuietly(pool) }

            let human = try FS.provideo(pool, "status")
            #expect(human.stdout.contains("\ngrants      fallocate and cut\n"), "\(human.stdout)")
            let line = try #require(human.stdout.split(separator: "\n").first { $0.hasPrefix("discard     ") })
            #expect(line.contains("`nodiscard`") && line.contains("`fstrim.timer`") && line.contains("exchange=1"), "\(line)")
            let status = try TestSupport.poolStatus(pool)
            #expect(status.grants == .fallocateAndCut && status.grantsNote == nil)
            #expect(status.onlineDiscard?.mountPoint == fs.mountPoint && status.onlineDiscard?.filesystem == "ext4")
            let check = try FS.provideo(pool, "check")
            #expect(check.status == 0 && check.stdout.contains("\nnote: the pool's filesystem"), "\(check.stdout)")
            let checkJSON = try FS.provideo(pool, "check", "--json")
            #expect(checkJSON.stdout.contains("\"onlineDiscard\""), "\(checkJSON.stdout)")

            // The same pool once the filesystem is mounted without it: nothing to say.
            try TestSupport.shell("umount \(fs.mountPoint) && mount \(fs.device) \(fs.mountPoint)")
            #expect(try TestSupport.poolStatus(pool).onlineDiscard == nil)
            let quiet = try FS.provideo(pool, "status")
            #expect(!quiet.stdout.contains("\ndiscard     "), "\(quiet.stdout)")
            #expect(!(try FS.provideo(pool, "check")).stdout.contains("note:"))
        }
    }
}

import Testing
@testable import ProVideoStorage

/// /proc/self/mountinfo as the pool reads it (proc(5)).
@Suite struct MountInfoTests {
    /// mountinfo's superblock options say whether the filesystem discards online; "nodiscard"
    /// is not "discard", and a line without them parses with none.
    @Test func mountinfoLinesGiveTheFilesystemsOptions() throws {
        let root = try #require(MountInfo.parse("27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard,resuid=65534"))
        #expect(root.id == 27 && root.major == 254 && root.minor == 0 && root.mountPoint == "/" && root.type == "ext4")
        #expect(root.source == "/dev/vda" && root.superOptions == ["rw", "discard", "resuid=65534"])
        let xfs = try #require(MountInfo.parse("40 27 7:1 / /srv/rec\\040a rw shared:1 - xfs /dev/loop1 rw,nodiscard,noquota"))
        #expect(xfs.mountPoint == "/srv/rec a" && !xfs.superOptions.contains("discard"))
        #expect(MountInfo.parse("41 27 0:50 / /mnt rw - tmpfs tmpfs")?.superOptions == [])
        #expect(MountInfo.parse("not a mountinfo line") == nil)
        // An empty source is a field of its own: the options after it are still the options.
        let empty = try #require(MountInfo.parse("42 27 0:51 / /run/user rw - tmpfs  rw,discard"))
        #expect(empty.type == "tmpfs" && empty.source == "" && empty.superOptions == ["rw", "discard"])
    }
}

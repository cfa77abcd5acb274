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

    /// Online discard is named from the superblock options alone, with its cost and both
    /// remedies; a pool whose grants exchange extents is told only the remedy that still applies.
    @Test func onlineDiscardIsNamedWithItsCostAndRemedies() throws {
        let root = try #require(MountInfo.parse("27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard,resuid=65534"))
        let named = try #require(OnlineDiscard.of(root, grantsByExchange: false))
        #expect(named.mountPoint == "/" && named.filesystem == "ext4")
        for part in ["ext4 at /", "`discard`", "4.8–12.2 s", "`nodiscard`", "`fstrim.timer`", "`mkfs.xfs -i exchange=1`"] {
            #expect(named.message.contains(part), "\(part) missing from: \(named.message)")
        }
        let exchanging = try #require(OnlineDiscard.of(root, grantsByExchange: true))
        #expect(exchanging.message.contains("`fstrim.timer`") && !exchanging.message.contains("mkfs.xfs"))
        // `nodiscard`, an option that merely contains the word, and a per-mount option are not it.
        for line in ["40 27 7:1 / /srv/rec rw shared:1 - xfs /dev/loop1 rw,nodiscard,noquota",
                     "41 27 7:2 / /srv/b rw,discard - ext4 /dev/loop2 rw,errors=remount-ro",
                     "42 27 7:3 / /srv/c rw - btrfs /dev/loop3 rw,discard=async,space_cache=v2"] {
            let mount = try #require(MountInfo.parse(Substring(line)))
            #expect(OnlineDiscard.of(mount, grantsByExchange: false) == nil, "\(line)")
        }
    }
}

import Foundation
import TestSupport
import Testing
@testable import ProVideoStorage

/// fstab(5) as the pool reads it: the mount points of filesystems, and which of them at or above
/// a path is not mounted now.
@Suite struct FstabEntryTests {
    @Test func theEntriesAreTheFilesystemsMountedAtDirectories() {
        let text = """
            # /etc/fstab: static file system information.
            UUID=1b2c / ext4 errors=remount-ro 0 1
            /dev/sdb1\t/srv/rec\txfs\tdefaults,nofail\t0\t2
            LABEL=card /media/my\\040card exfat noauto 0 0
            /dev/sda3 none swap sw 0 0
            /swapfile swap swap defaults 0 0

            """
        #expect(FstabEntry.entries(in: text) == [
            FstabEntry(source: "UUID=1b2c", mountPoint: "/", type: "ext4"),
            FstabEntry(source: "/dev/sdb1", mountPoint: "/srv/rec", type: "xfs"),
            FstabEntry(source: "LABEL=card", mountPoint: "/media/my card", type: "exfat"),
        ])
    }

    @Test func octalEscapesAreCharacters() {
        #expect(FstabEntry.unescape(#"/a\040b\011c\134d"#) == "/a b\tc\\d")
        #expect(FstabEntry.unescape(#"/a\04"#) == #"/a\04"#)
        #expect(FstabEntry.unescape(#"/a\999"#) == #"/a\999"#)
    }

    @Test func aMountPointIsAnAncestorComponentByComponent() {
        #expect(FstabEntry.isAtOrAbove("/srv/rec", "/srv/rec/pool"))
        #expect(FstabEntry.isAtOrAbove("/srv/rec", "/srv/rec"))
        #expect(FstabEntry.isAtOrAbove("/", "/srv"))
        #expect(!FstabEntry.isAtOrAbove("/srv/rec", "/srv/recordings/pool"))
    }

    /// A directory named in the table but not mounted is reported for every path beneath it; a
    /// mounted one (the root) and one elsewhere are not.
    @Test func onlyAnUnmountedFilesystemAtOrAboveThePathCounts() throws {
        try TestSupport.withScratch { scratch in
            let mountPoint = scratch + "/rec"
            try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
            let table = scratch + "/fstab"
            try "UUID=1b2c / ext4 defaults 0 1\n/dev/sdz1 \(mountPoint) ext4 nofail 0 2\n/dev/sdz2 /elsewhere ext4 0 2\n"
                .write(toFile: table, atomically: false, encoding: .utf8)
            let entry = FstabEntry(source: "/dev/sdz1", mountPoint: mountPoint, type: "ext4")
            #expect(FstabEntry.unmounted(holding: mountPoint + "/pool", table: table) == entry)
            #expect(FstabEntry.unmounted(holding: mountPoint, table: table) == entry)
            #expect(FstabEntry.unmounted(holding: scratch + "/other", table: table) == nil)
            #expect(FstabEntry.unmounted(holding: mountPoint + "/pool", table: scratch + "/missing") == nil)
            #expect(FstabEntry.isMountPoint(mountPoint, table: table))
            #expect(!FstabEntry.isMountPoint(mountPoint + "/pool", table: table))
        }
    }
}

import FoundationEssentials
import Glibc
import ProVideoSystem

/// Alignment that `O_DIRECT` requires, in bytes.
package struct DirectIOAlignment: Codable, Sendable, Equatable {
    /// Alignment of the memory buffer address and length.
    package var memory: Int
    /// Alignment of the file offset and length.
    package var offset: Int

    package init(memory: Int, offset: Int) {
        self.memory = memory
        self.offset = offset
    }

    /// The alignment every write of the pool uses: the larger of the two.
    package var io: Int { max(memory, offset) }
}

/// The block device under a filesystem, as libblkid reports it (`blkid_probe_get_topology`).
/// All sizes in bytes; 0 where the filesystem has no single block device (tmpfs, overlayfs).
package struct DeviceTopology: Codable, Sendable, Equatable {
    package var path: String?
    package var logicalSectorSize: Int
    package var physicalSectorSize: Int
    var minimumIOSize: Int
    package var optimalIOSize: Int

    /// The queue limits in /sys/dev/block/MAJ:MIN/queue (a partition's are its disk's), from the
    /// device number of `devicePath`.
    static func sysfs(devicePath: String) -> DeviceTopology? {
        guard let node = try? FileSystem.facts(devicePath), node.mode & UInt32(S_IFMT) == UInt32(S_IFBLK) else { return nil }
        let base = "/sys/dev/block/\(node.representedDeviceMajor):\(node.representedDeviceMinor)"
        let queue = FileSystem.exists(base + "/queue") ? base + "/queue" : base + "/../queue"
        func value(_ name: String) -> Int? { FileSystem.readInteger(queue + "/" + name) }
        guard let logical = value("logical_block_size") else { return nil }
        return DeviceTopology(path: devicePath, logicalSectorSize: logical,
                              physicalSectorSize: value("physical_block_size") ?? logical,
                              minimumIOSize: value("minimum_io_size") ?? logical,
                              optimalIOSize: value("optimal_io_size") ?? 0)
    }

    package static let unknown = DeviceTopology(path: nil, logicalSectorSize: 0, physicalSectorSize: 0,
                                               minimumIOSize: 0, optimalIOSize: 0)
}

/// What the kernel reports about the filesystem holding a directory.
package struct StorageFacts: Codable, Sendable, Equatable {
    /// The filesystem type as /proc/self/mountinfo names it ("ext4", "xfs", "btrfs", …).
    package var filesystem: String
    /// statfs(2) `f_type`.
    var filesystemMagic: Int64
    /// The filesystem's preferred block size (`stx_blksize`).
    package var blockSize: Int
    /// What `statx(STATX_DIOALIGN)` reported; `nil` where the filesystem leaves it clear
    /// (btrfs and tmpfs on Linux 6.18).
    var reportedAlignment: DirectIOAlignment?
    /// The alignment the pool uses: the reported one, else the device's logical sector size
    /// and the filesystem block size, whichever is larger (never a constant).
    package var directIOAlignment: DirectIOAlignment
    package var device: DeviceTopology

    /// tmpfs and ramfs (statfs(2) magic numbers from linux/magic.h) hold files in the page cache.
    static let memoryFilesystems: [Int64: String] = [0x0102_1994: "tmpfs", 0x8584_58f6: "ramfs"]
    static let btrfsMagic: Int64 = 0x9123_683E

    var isBtrfs: Bool { filesystemMagic == Self.btrfsMagic }

    /// Reads the facts for `path`, a directory (where a pool lives) or a regular file.
    /// ext4 and XFS report `STATX_DIOALIGN` for regular files only, so for a directory the
    /// alignment is read from a scratch file created (and removed) in it when it is writable.
    package static func read(_ path: String) throws -> StorageFacts {
        let facts = try FileSystem.facts(path)
        let magic = try FileSystem.space(path).type
        let mount = MountInfo.find(mountID: facts.mountID) ?? MountInfo.find(major: facts.deviceMajor, minor: facts.deviceMinor)
        var device = DeviceTopology.unknown
        if let source = mount?.source, source.hasPrefix("/dev/") {
            if let topology = FileSystem.deviceTopology(source) {
                device = DeviceTopology(path: source,
                                        logicalSectorSize: Int(topology.logical_sector_size),
                                        physicalSectorSize: Int(topology.physical_sector_size),
                                        minimumIOSize: Int(topology.minimum_io_size),
                                        optimalIOSize: Int(topology.optimal_io_size))
            } else if let fromSysfs = DeviceTopology.sysfs(devicePath: source) {
                // libblkid opens the device, which a container may forbid (EPERM); the kernel
                // publishes the same queue limits in sysfs.
                device = fromSysfs
            }
        }
        let file = FileSystem.isDirectory(path) ? regularFileFacts(in: path) ?? facts : facts
        let reported = file.directIOOffsetAlignment > 0
            ? DirectIOAlignment(memory: Int(file.directIOMemoryAlignment), offset: Int(file.directIOOffsetAlignment)) : nil
        let fallback = max(device.logicalSectorSize, Int(facts.blockSize))
        return StorageFacts(
            filesystem: mount?.type ?? String(magic, radix: 16),
            filesystemMagic: magic,
            blockSize: Int(facts.blockSize),
            reportedAlignment: reported,
            directIOAlignment: reported ?? DirectIOAlignment(memory: fallback, offset: fallback),
            device: device)
    }

    /// statx of a fresh empty regular file in `directory`, or nil when none can be created.
    private static func regularFileFacts(in directory: String) -> FileFacts? {
        let path = directory + "/.provideo-statx-\(ProcessIdentity.pid)"
        guard let fd = try? FileDescriptor.open(path, O_WRONLY | O_CREAT | O_EXCL, mode: 0o600) else { return nil }
        defer { try? FileSystem.remove(path) }
        return try? fd.facts()
    }

    /// Whether the filesystem holding `path` is mounted with `discard` (online discard, the
    /// superblock option in mountinfo): every freed extent is discarded as it is freed, inline
    /// in the truncate or unlink on ext4 without a journal (ext4(5) "discard"), which on a
    /// virtual or slow-to-trim disk stalls the writes queued beside it. nil when the mount is
    /// not found; false also when ext4 has `discard` among its superblock's default mount
    /// options (`tune2fs -o discard`), which mountinfo leaves out. Not part of `StorageFacts`:
    /// the pool stores those, and the mount can change.
    package static func mountedWithDiscard(_ path: String) -> Bool? {
        MountInfo.holding(path).map { $0.superOptions.contains("discard") }
    }

    /// Free bytes on the filesystem holding `path` for unprivileged users (statfs `f_bavail`).
    package static func availableBytes(_ path: String) throws -> Int64 {
        try FileSystem.space(path).available
    }
}

/// One line of /proc/self/mountinfo (see proc(5)).
struct MountInfo {
    var id: UInt64
    var major: UInt32
    var minor: UInt32
    var mountPoint: String
    var type: String
    var source: String
    /// The filesystem's own options (after the source), "discard" among them when it is on.
    var superOptions: [String]

    /// The mount with this mount ID (statx `STATX_MNT_ID`, field 1 of mountinfo). On btrfs the
    /// device number stat reports is an anonymous one that mountinfo does not show.
    static func find(mountID: UInt64) -> MountInfo? {
        guard mountID != 0 else { return nil }
        return all().first { $0.id == mountID }
    }

    /// The mount holding `path`, by its mount ID, else by its device number; nil when `path`
    /// cannot be looked at or its mount is not listed.
    static func holding(_ path: String) -> MountInfo? {
        guard let facts = try? FileSystem.facts(path) else { return nil }
        return find(mountID: facts.mountID) ?? find(major: facts.deviceMajor, minor: facts.deviceMinor)
    }

    /// The last (topmost) mount whose device number is `major:minor`.
    static func find(major: UInt32, minor: UInt32) -> MountInfo? {
        all().last { $0.major == major && $0.minor == minor }
    }

    /// Every mount this process sees, in mount order.
    static func all() -> [MountInfo] {
        guard let bytes = try? FileSystem.readSmallFile("/proc/self/mountinfo") else { return [] }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").compactMap(parse)
    }

    /// One line of mountinfo: "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root
    /// rw,errors=continue" (proc(5)); nil when it has not that shape.
    static func parse(_ line: Substring) -> MountInfo? {
        // Fields are one space apart (spaces inside them are escaped as \040), so an empty
        // field, a mount's empty source, stays a field.
        let fields = line.split(separator: " ", omittingEmptySubsequences: false)
        guard fields.count > 6, let dash = fields.firstIndex(of: "-"), dash + 2 < fields.count,
              let id = UInt64(fields[0]) else { return nil }
        let numbers = fields[2].split(separator: ":")
        guard numbers.count == 2, let major = UInt32(numbers[0]), let minor = UInt32(numbers[1]) else { return nil }
        return MountInfo(id: id, major: major, minor: minor, mountPoint: FstabEntry.unescape(fields[4]),
                         type: String(fields[dash + 1]), source: String(fields[dash + 2]),
                         superOptions: dash + 3 < fields.count ? fields[dash + 3].split(separator: ",").map(String.init) : [])
    }
}

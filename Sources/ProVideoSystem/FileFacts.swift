import CProVideo

/// What statx(2) says of one file (`struct statx`, man 2 statx), in Swift's terms: the shim's
/// `pv_file_facts` stays below this layer.
package struct FileFacts: Sendable, Equatable {
    /// `STATX_DIOALIGN`'s memory and offset alignments for direct I/O, in bytes; 0 when the
    /// filesystem does not report them (Linux 6.1+).
    package var directIOMemoryAlignment: UInt32
    package var directIOOffsetAlignment: UInt32
    /// `stx_blksize`, in bytes.
    package var blockSize: UInt32
    /// `stx_size`, in bytes.
    package var size: UInt64
    /// `stx_blocks` × 512: bytes the filesystem allocated.
    package var allocatedBytes: UInt64
    /// The filesystem's device; with `inode`, which file this is.
    package var deviceMajor: UInt32
    package var deviceMinor: UInt32
    /// `STATX_MNT_ID`: field 1 of /proc/self/mountinfo.
    package var mountID: UInt64
    /// For a block device node, the device it stands for.
    package var representedDeviceMajor: UInt32
    package var representedDeviceMinor: UInt32
    package var mode: UInt32
    package var uid: UInt32
    package var gid: UInt32
    package var inode: UInt64
    /// Hard links to it.
    package var linkCount: UInt32

    init(_ raw: pv_file_facts) {
        directIOMemoryAlignment = raw.dio_mem_align
        directIOOffsetAlignment = raw.dio_offset_align
        blockSize = raw.block_size
        size = raw.size
        allocatedBytes = raw.allocated_bytes
        deviceMajor = raw.dev_major
        deviceMinor = raw.dev_minor
        mountID = raw.mount_id
        representedDeviceMajor = raw.rdev_major
        representedDeviceMinor = raw.rdev_minor
        mode = raw.mode
        uid = raw.uid
        gid = raw.gid
        inode = raw.ino
        linkCount = raw.nlink
    }

    /// Whether this and `other` are the same file: the same device and inode.
    package func isSameFile(as other: FileFacts) -> Bool {
        deviceMajor == other.deviceMajor && deviceMinor == other.deviceMinor && inode == other.inode
    }
}

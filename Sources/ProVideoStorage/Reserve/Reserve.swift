import Glibc
import ProVideoSystem
import ProVideoJournal

/// The reserve file: preallocated with fallocate(2), its size is the capacity a capture can
/// use. Grows allocate only the new range (on btrfs, fallocate over an allocated range reserves
/// the whole length again), and a failed grow is rolled back exactly.
struct Reserve {
    let path: String
    let calls: SystemCalls
    let access: PoolAccess
    /// The unit every reserve size is rounded to: the pool's direct-I/O alignment and the
    /// filesystem block size, whichever is larger.
    let unit: Int64
    /// The filesystem's block size in bytes (for `MetadataHeadroom`).
    let blockSize: Int64
    /// The filesystem is btrfs, whose metadata reservations the headroom must cover too.
    var isBtrfs = false
    /// Whether grants and give-backs move extents instead (`ExtentExchange`, XFS); nil: they
    /// never do.
    var exchange: ExtentExchange? = nil

    /// The largest reserve, and so the largest capacity a pool takes, in bytes: 8 EiB less
    /// 1 GiB, the largest multiple of 1 GiB a file offset (Int64) holds. A capacity is rounded
    /// up to the allocation unit (the direct-I/O alignment or the block size, a power of two far
    /// below 1 GiB), and near `Int64.max` that rounding would overflow; below this limit it
    /// always fits.
    static let maximumSize: Int64 = CaptureJournal.maximumLength

    /// The reserve's size in bytes, 0 when there is no reserve file.
    /// - Throws: statx's error other than `ENOENT`: a reserve that cannot be looked at is of
    ///   unknown size, not empty.
    func size() throws -> Int64 {
        guard try FileSystem.isPresent(path) else { return 0 }
        return Int64(try FileSystem.facts(path).size)
    }

    /// Bytes the filesystem really allocated for the reserve (`st_blocks` × 512).
    func allocatedBytes() throws -> Int64 {
        guard try FileSystem.isPresent(path) else { return 0 }
        return Int64(try FileSystem.facts(path).allocatedBytes)
    }

    func rounded(_ bytes: Int64) -> Int64 { (bytes + unit - 1) / unit * unit }

    /// - Parameter recorders: create it as the recorder's own file (`PoolAccess.openCreatingOwn`):
    ///   a capture's `data`, whose owner salvage acts as.
    func open(create: Bool = false, nocow: Bool, recorders: Bool = false) throws -> FileDescriptor {
        let fd = !create ? try FileDescriptor.open(path, O_RDWR)
            : recorders ? try access.openCreatingOwn(path, O_RDWR) : try access.openCreating(path, O_RDWR)
        // FS_NOCOW_FL only takes effect on an empty file; the pool directory carries it too, so
        // files created in it inherit it. Filesystems without the flag answer ENOTTY.
        if nocow { fd.setNoCOW() }
        return fd
    }

    /// Extends the reserve from its current size to `newSize` bytes.
    /// - Throws: `.notEnoughSpace` saying how many bytes were missing, after putting the file's
    ///   size and allocated blocks back exactly as they were; `.ioError` for other failures.
    /// - Throws: `.corruptState` when the sizes are not whole units (a reserve someone else
    ///   truncated): never a trap in the host.
    func grow(_ fd: FileDescriptor, from oldSize: Int64, to newSize: Int64) throws {
        guard newSize > oldSize, newSize % unit == 0 else {
            throw ProVideoError(.corruptState, "\(path) would grow from \(oldSize) to \(newSize) bytes, not a whole number of "
                                + "\(unit)-byte units: its size was changed outside the pool",
                                path: path, remedies: [.check])
        }
        let needed = newSize - oldSize
        try requireSpace(needed, reaching: newSize)
        let rc = calls.fallocate(fd.rawValue, false, oldSize, needed)
        if rc == 0 {
            // The new size and extents must survive a power cut before the grow returns: a
            // resize or replenish that reported the capacity and then lost it to the journal's
            // next commit broke its promise (Tools/powerloss found it on ext4 and XFS).
            try fd.sync(calls)
            return
        }
        // Rolled back first, so the space reported free no longer counts what the call kept.
        let undone = Result { try rollBack(fd, to: oldSize) }
        let failure = rc == -ENOSPC || rc == -EDQUOT
            ? Self.notEnoughSpace(needed: needed, available: Result { try usableBytes(reaching: newSize) }, errno: -rc, path: path)
            : ProVideoError.system("fallocate", errno: -rc, path: path)
        throw Rollback.keepingFirst(failure, restoring: "\(path)'s size (\(oldSize) bytes)") { try undone.get() }
    }

    /// Refuses up front a grow that cannot fit with the pool's own files beside it
    /// (`MetadataHeadroom`): an oversized fallocate that fails still changes the filesystem
    /// (ext4 keeps a deeper extent tree, XFS keeps blocks past the end).
    /// - Parameter reaching: the reserve's size after the grow, in bytes.
    /// - Throws: `.notEnoughSpace` with the missing bytes.
    func requireSpace(_ needed: Int64, reaching size: Int64) throws {
        let available = try usableBytes(reaching: size)
        if needed > available { throw Self.notEnoughSpace(needed: needed, available: .success(available), errno: ENOSPC, path: path) }
    }

    /// The filesystem's free bytes (statfs `f_bavail`) less the headroom the pool keeps for its
    /// own files with a reserve of `size` bytes (the part its spare does not already hold).
    func usableBytes(reaching size: Int64) throws -> Int64 {
        let available = try StorageFacts.availableBytes(FileSystem.parent(of: path))
        let held = try access.spare?.size() ?? 0
        return max(available - max(headroom(reaching: size) - held, 0), 0)
    }

    /// `MetadataHeadroom` for a reserve of `size` bytes.
    func headroom(reaching size: Int64) -> Int64 {
        MetadataHeadroom.bytes(blockSize: blockSize, directIOBlock: unit, capacity: size, btrfs: isBtrfs)
    }

    /// `available`: the usable bytes, or why they could not be read (then said, not shown as 0).
    private static func notEnoughSpace(needed: Int64, available: Result<Int64, Error>, errno: Int32,
                                       path: String) -> ProVideoError {
        let usable: String
        switch available {
        case .success(let bytes):
            let missing = max(needed - bytes, 0)
            usable = "\(ByteFormat.human(bytes)) usable (free space less the pool's room for its own files), "
                + "\(ByteFormat.human(missing)) (\(missing) bytes) missing"
        case .failure(let error):
            usable = "the usable space cannot be read (\((error as? ProVideoError)?.message ?? "\(error)"))"
        }
        return ProVideoError(.notEnoughSpace, "the filesystem cannot allocate \(ByteFormat.human(needed)) for the reserve: "
                             + usable + "; nothing was changed", errno: errno, path: path)
    }

    /// The reserve's data extents (FIEMAP): bytes mapped below its size, and the end of its
    /// last extent. Metadata blocks (ext4 extent index blocks) are not counted, unlike
    /// `st_blocks`.
    func extents() throws -> (mapped: Int64, end: Int64) {
        guard try FileSystem.isPresent(path) else { return (0, 0) }
        let fd = try FileDescriptor.open(path, O_RDONLY)
        return try fd.extents(below: try size())
    }

    /// Puts the file back to `size` bytes and frees every block past it, including blocks a
    /// failed fallocate kept past end of file (XFS does). A shrink is what makes every
    /// filesystem free blocks past the new end, so the file is first made one byte longer.
    func rollBack(_ fd: FileDescriptor, to size: Int64) throws {
        try fd.truncate(size + 1, calls)
        try fd.truncate(size, calls)
    }

    /// Cuts the reserve's unmapped tail, which only a grant by extent exchange killed between
    /// its exchange and its cut leaves (`ReserveGrants`): the tail's blocks are in the capture's
    /// file, so the reserve is that much smaller and the cut frees nothing. Call with the size
    /// lock held, where no live grant is halfway, and only where grants exchange extents:
    /// elsewhere nothing leaves such a tail, and `Pool.check()` names one.
    func cutUnmappedTail() throws {
        let size = try size()
        let end = try extents().end
        guard end < size else { return }
        try open(nocow: false).truncate(rounded(end), calls)
    }

    /// Frees blocks allocated past the end of the file, left by a grow that was killed.
    func trimPastEnd() throws {
        let size = try size()
        if try extents().end > rounded(size) { try rollBack(try open(nocow: false), to: size) }
    }

    /// Writes zeros over [from, to) with direct I/O so later captures overwrite written extents
    /// (`create --zero`). `progress` gets (bytes done, bytes total); `control` may stop it every
    /// 8 MiB (`.cancelled`).
    func zeroFill(from: Int64, to: Int64, alignment: Int, control: OperationControl,
                  progress: ((Int64, Int64) -> Void)?) throws {
        let chunk = 8 << 20
        guard let buffer = AlignedBuffer(length: chunk, alignment: alignment) else {
            throw ProVideoError(.ioError, "cannot allocate \(chunk) bytes for zero-filling")
        }
        buffer.bytes.initializeMemory(as: UInt8.self, repeating: 0)
        let fd = try FileDescriptor.open(path, O_WRONLY, direct: true)
        var offset = from
        while offset < to {
            try control.checkpoint("zero-filling the reserve")
            let length = Int(min(Int64(chunk), to - offset))
            try fd.writeAll(UnsafeRawBufferPointer(rebasing: buffer.bytes[0..<length]), at: offset, alignment: alignment, calls)
            offset += Int64(length)
            progress?(offset - from, to - from)
        }
        try fd.sync(calls)
    }
}

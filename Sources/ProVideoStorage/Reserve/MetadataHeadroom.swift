import Glibc
import ProVideoSystem

/// The space a pool keeps free on its filesystem for its own files, in bytes: a reserve may
/// grow (create, resize, replenish, a capture's give-back) only as far as the
/// filesystem's free space less this headroom, so that a capture, a move and a salvage can
/// always write their small files. Counted file by file, each rounded up to whole blocks, at
/// the moment the most of them exist at once:
///
///     pool.json + pool.json.tmp                      2 files
///     recovered.json + its .tmp                      2 × `recoveredLogBytes`
///     capture/, capture.json + its .tmp, commit      4 files
///     progress                                       one direct-I/O block
///     recordings/, a held recording's note + .tmp    3 files
///     the pool directory growing by one block        1 file
///
/// plus the blocks the filesystem needs to map the reserve's extents: ext4 keeps at most 340
/// extents of at most 128 MiB in one 4 KiB index block (ext4 disk layout, "Extent Tree"),
/// XFS about as many records in one block of its extent B+tree, so one block per 42.5 GiB.
///
/// btrfs needs more: every change to its trees (a rename, a write into preallocated NOCOW
/// blocks) first reserves metadata for the worst case, nodesize × 8 levels × 2 per item
/// (`btrfs_calc_insert_metadata_size`), a rename 5 items or more, and refuses with ENOSPC
/// when the free space cannot cover that reservation, however little the change really
/// writes. On a full 96 MiB btrfs (mixed block groups, 4 KiB nodes) a rename failed with
/// 512 KiB freed and worked with 1 MiB; with the default 16 KiB nodes a rename reserves
/// 1.25 MiB. So on btrfs the headroom holds `btrfsTransactionBytes` more.
enum MetadataHeadroom {
    /// Room for the salvage log: about 150 bytes per salvaged recording, so about 100 of them.
    static let recoveredLogBytes: Int64 = 16 << 10
    static let smallFiles: Int64 = 2 + 4 + 3 + 1
    static let bytesMappedPerIndexBlock: Int64 = 340 * (128 << 20)
    /// A rename's metadata reservation on btrfs with 16 KiB nodes, with room to spare.
    static let btrfsTransactionBytes: Int64 = 2 << 20

    /// - Parameters:
    ///   - blockSize: the filesystem block size in bytes.
    ///   - directIOBlock: the pool's direct-I/O alignment in bytes (the `progress` file's size).
    ///   - capacity: the reserve's size in bytes.
    ///   - btrfs: the filesystem is btrfs (see `btrfsTransactionBytes`).
    static func bytes(blockSize: Int64, directIOBlock: Int64, capacity: Int64, btrfs: Bool = false) -> Int64 {
        let block = max(blockSize, 512)
        func blocks(_ bytes: Int64) -> Int64 { (bytes + block - 1) / block * block }
        let indexBlocks = capacity / bytesMappedPerIndexBlock + 1
        return smallFiles * block + 2 * blocks(recoveredLogBytes) + blocks(directIOBlock) + indexBlocks * block
            + (btrfs ? btrfsTransactionBytes : 0)
    }
}

/// The headroom held in a preallocated file, `spare` in the pool directory, so that no other
/// writer on the filesystem can take it: when a pool file cannot be written for lack of space
/// (a journal, a note, `pool.json`), the spare gives its blocks back and the write is retried
/// once. `Pool.repair(control:)` fills it again when the filesystem has room.
struct MetadataSpare: Sendable, Equatable {
    let path: String

    /// Bytes the spare holds (0 when it is missing).
    /// - Throws: statx's error other than ENOENT: what it holds is then unknown.
    func size() throws -> Int64 {
        do {
            return Int64(clamping: try FileSystem.facts(path).size)
        } catch let error as ProVideoError where error.errno == ENOENT {
            return 0
        }
    }

    /// Gives the spare's blocks and its inode back to the filesystem. Returns false when there
    /// was no spare to give.
    func release(_ calls: SystemCalls) -> Bool {
        guard let fd = try? FileDescriptor.open(path, O_RDWR) else { return false }
        // The fsync commits the freeing: XFS does not hand out blocks freed by a transaction
        // still in memory ("busy extents").
        guard calls.ftruncate(fd.rawValue, 0) == 0, calls.fsync(fd.rawValue) == 0 else { return false }
        // The unlink frees the inode as well: a write that failed for want of one (ext4 with its
        // inodes used up, a `.tmp` that open(2) could not create) finds it on the retry. Where
        // the unlink itself fails the blocks are still given, so the retry is still worth it.
        // The next `refill` makes the spare again.
        _ = try? FileSystem.remove(path)
        return true
    }

    /// Grows the spare to `bytes` with fallocate(2), best effort (a full filesystem, or a spare
    /// whose size cannot be read, leaves it as it was).
    func refill(to bytes: Int64, _ calls: SystemCalls, access: PoolAccess) {
        guard let current = try? size(), bytes > current, let fd = try? access.openCreating(path, O_RDWR) else { return }
        if calls.fallocate(fd.rawValue, false, current, bytes - current) != 0 { _ = calls.ftruncate(fd.rawValue, current) }
    }

    /// Runs `write`; when it fails for lack of space and the spare held blocks, releases them
    /// and runs it once more.
    func retryingOnFullFilesystem<T>(_ calls: SystemCalls, _ write: () throws -> T) throws -> T {
        do {
            return try write()
        } catch let error as ProVideoError where error.code == .notEnoughSpace {
            guard release(calls) else { throw error }
            return try write()
        }
    }
}

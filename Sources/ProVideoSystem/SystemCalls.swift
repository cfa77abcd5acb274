import CProVideo
import Glibc

/// The system calls the library makes on data files, gathered in one value
/// so tests can swap any of them to inject short writes, `EIO`, `ENOSPC` or `EXDEV`. A test
/// seam: `package`, not part of the library's public API.
///
/// Every call returns what the kernel returns, with errors as negative errno values (the
/// io_uring convention): byte counts for reads and writes, 0 for success otherwise.
package struct SystemCalls: Sendable {
    /// fallocate(2) on `fd`; `keepSize` adds `FALLOC_FL_KEEP_SIZE`.
    package var fallocate: @Sendable (_ fd: Int32, _ keepSize: Bool, _ offset: Int64, _ length: Int64) -> Int32
    /// XFS_IOC_EXCHANGE_RANGE: swaps the extents of `fd`'s `[offset, offset + length)` with
    /// `fromFD`'s `[fromOffset, fromOffset + length)`, so that blocks move from one file to
    /// another without being freed or allocated (issue 64).
    package var exchangeRange: @Sendable (_ fd: Int32, _ fromFD: Int32, _ fromOffset: Int64, _ offset: Int64,
                                          _ length: Int64) -> Int32 = { fd, from, fromOffset, offset, length in
        pv_exchange_range(fd, from, fromOffset, offset, length)
    }
    /// ftruncate(2).
    package var ftruncate: @Sendable (_ fd: Int32, _ length: Int64) -> Int32
    /// fdatasync(2).
    package var fdatasync: @Sendable (_ fd: Int32) -> Int32
    /// fsync(2): a finished copy, a small metadata file, or a directory after a rename or a
    /// create in it (the step that makes the name survive a power cut).
    package var fsync: @Sendable (_ fd: Int32) -> Int32
    /// pwrite(2): the writer thread of the `pwrite` engine and in-place patches use it.
    package var pwrite: @Sendable (_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int, _ offset: Int64) -> Int
    /// pread(2).
    package var pread: @Sendable (_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int, _ offset: Int64) -> Int
    /// renameat2(2) with `RENAME_NOREPLACE`.
    package var renameNoReplace: @Sendable (_ from: String, _ to: String) -> Int32
    /// link(2): publishes a finished copy where renameat2 has no `RENAME_NOREPLACE` (FUSE
    /// filesystems such as GlusterFS, NFS): -EEXIST when the name exists.
    package var link: @Sendable (_ from: String, _ to: String) -> Int32 = { from, to in pv_link(from, to) }
    /// Runs before a file is opened only to read who holds its lock (a liveness check): 0 lets
    /// the open go on, an errno fails it as open(2) would (EMFILE in a process with many files
    /// open). The live value is 0.
    package var lockProbeOpen: @Sendable (_ path: String) -> Int32 = { _ in 0 }
    /// Runs before a path is looked at to decide whether it is there (`FileSystem.isPresent(_:_:)`):
    /// 0 lets the look go on, an errno fails it as statx(2) would (EIO on a failing disk, EACCES
    /// through a root-squashed NFS mount). The live value is 0.
    package var lookAt: @Sendable (_ path: String) -> Int32 = { _ in 0 }
    /// close(2) where its error is read (`FileDescriptor.close(_:)`): NFS and FUSE filesystems
    /// report there a write-back that failed. The descriptor is released either way.
    package var close: @Sendable (_ fd: Int32) -> Int32 = { fd in Glibc.close(fd) == 0 ? 0 : -Glibc.errno }
    /// copy_file_range(2) between explicit offsets.
    package var copyFileRange: @Sendable (_ fdIn: Int32, _ offsetIn: Int64, _ fdOut: Int32, _ offsetOut: Int64, _ length: Int) -> Int
    /// Sees the `res` of every io_uring write completion (the CQE) before the engine does, with
    /// the number of bytes that write asked for. The live value passes `res` through.
    package var writeCompletion: @Sendable (_ requested: Int32, _ res: Int32) -> Int32
    /// Wraps the write engine (io_uring or pwrite), so that tests can delay,
    /// reorder or fail its requests and completions. The live value is the engine itself.
    package var engine: @Sendable (any WriteEngine) -> any WriteEngine = { $0 }

    /// The real system calls (in a debug build, with the fault `PROVIDEO_FAULT` names, if any:
    /// `FaultSwitch`).
    package static let live = withFaultSwitch(SystemCalls(
        fallocate: { fd, keep, offset, length in pv_fallocate(fd, keep ? 1 : 0, offset, length) },
        ftruncate: { fd, length in Glibc.ftruncate(fd, off_t(length)) == 0 ? 0 : -Glibc.errno },
        fdatasync: { fd in Glibc.fdatasync(fd) == 0 ? 0 : -Glibc.errno },
        fsync: { fd in Glibc.fsync(fd) == 0 ? 0 : -Glibc.errno },
        pwrite: { fd, buffer, count, offset in
            let n = Glibc.pwrite(fd, buffer, count, off_t(offset))
            return n < 0 ? -Int(Glibc.errno) : n
        },
        pread: { fd, buffer, count, offset in
            let n = Glibc.pread(fd, buffer, count, off_t(offset))
            return n < 0 ? -Int(Glibc.errno) : n
        },
        renameNoReplace: { from, to in pv_rename_noreplace(from, to) },
        copyFileRange: { fdIn, offsetIn, fdOut, offsetOut, length in
            Int(pv_copy_file_range(fdIn, offsetIn, fdOut, offsetOut, UInt64(length)))
        },
        writeCompletion: { _, res in res }
    ))

    private static func withFaultSwitch(_ calls: SystemCalls) -> SystemCalls {
        #if DEBUG
        FaultSwitch.apply(to: calls)
        #else
        calls
        #endif
    }
}

import CProVideo
import Glibc

/// An owned file descriptor, closed on deinit (whose close(2) error nobody could act on) unless
/// `close(_:)` closed it first. The thin layer under the library: each method is one system
/// call whose failure becomes a `ProVideoError` naming the call and the path.
package final class FileDescriptor {
    package let rawValue: Int32
    package let path: String
    private var isClosed = false

    private init(rawValue: Int32, path: String) {
        self.rawValue = rawValue
        self.path = path
    }

    deinit { if !isClosed { Glibc.close(rawValue) } }

    /// close(2), read where it can matter: after the writes of a file whose content is the
    /// point, before it is published, since NFS and FUSE filesystems (GlusterFS's write-behind)
    /// may report a failed write only there. The descriptor is released even when close
    /// fails (man 2 close: retrying, even after EINTR, may close another thread's new file).
    /// - Throws: close(2)'s errno (`ProVideoError.system`). Closing twice traps: the number may
    ///   already be another file's.
    package func close(_ calls: SystemCalls) throws {
        precondition(!isClosed, "\(path) closed twice")
        isClosed = true
        let rc = calls.close(rawValue)
        if rc < 0 { throw ProVideoError.system("close", errno: -rc, path: path) }
    }

    /// open(2) of an unnamed regular file in `directory` (`O_TMPFILE`, read and write, mode
    /// 0600): it has no name to remove, and its blocks go back when it is closed.
    /// - Throws: the errno of open(2) (`EOPNOTSUPP` where the filesystem has no unnamed files).
    package static func openUnnamed(in directory: String) throws -> FileDescriptor {
        let fd = Glibc.open(directory, O_RDWR | pv_O_TMPFILE | O_CLOEXEC, 0o600)
        if fd < 0 { throw ProVideoError.system("open(O_TMPFILE)", errno: Glibc.errno, path: directory) }
        return FileDescriptor(rawValue: fd, path: directory)
    }

    /// open(2) with `O_CLOEXEC`; `direct` adds `O_DIRECT`. A path inside a confined directory
    /// is opened beneath it without following any link (`Confinement`), and must be
    /// a directory (`O_DIRECTORY`) or a regular file, with one link when opened for writing.
    /// `shownAs` is the path messages give for `path` (a `DirectoryHandle`'s file, opened as
    /// `/proc/self/fd/N/NAME`, is shown by the user's path).
    /// - Throws: the errno of open(2); `.corruptState` for a confined path that is a link, passes
    ///   through one, or is not a regular file.
    package static func open(_ path: String, _ flags: Int32, mode: mode_t = 0o644, direct: Bool = false,
                     shownAs: String? = nil) throws -> FileDescriptor {
        let flags = direct ? flags | pv_O_DIRECT : flags
        guard let (root, relative) = Confinement.split(path) else {
            let fd = Glibc.open(path, flags | O_CLOEXEC, mode)
            // ENOENT is a missing file and nothing more: the callers say what it means.
            if fd < 0 { throw ProVideoError.system("open", errno: Glibc.errno, path: shownAs ?? path) }
            return FileDescriptor(rawValue: fd, path: shownAs ?? path)
        }
        // O_NONBLOCK: a FIFO planted in place of a regular file must not block the open.
        let fd = Confinement.open(root: root, relative: relative, flags: flags | O_NONBLOCK, mode: mode)
        if fd < 0 { throw Confinement.refusal("open", errno: -fd, path: path) }
        let file = FileDescriptor(rawValue: fd, path: path)
        if flags & O_NONBLOCK == 0 { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) }
        let facts = try file.facts()
        let type = facts.mode & UInt32(S_IFMT)
        let writing = flags & (O_WRONLY | O_RDWR) != 0
        guard flags & O_DIRECTORY != 0 ? type == UInt32(S_IFDIR) : type == UInt32(S_IFREG), !writing || facts.linkCount <= 1 else {
            let name = Confinement.name(above: path)
            throw ProVideoError(.corruptState, "\(path) in \(name) is not " + (type == UInt32(S_IFREG)
                ? "a file of its own: it has \(facts.linkCount) hard links" : "a regular file")
                + "; nothing writes through such a file in \(name): remove it and run the command again", path: path)
        }
        return file
    }

    /// statx(2) on the open file.
    package func facts() throws -> FileFacts {
        var facts = pv_file_facts()
        let rc = pv_fstatx(rawValue, &facts)
        if rc < 0 { throw ProVideoError.system("statx", errno: -rc, path: path) }
        return FileFacts(facts)
    }

    /// fchmod(2).
    package func setMode(_ mode: mode_t) throws {
        if fchmod(rawValue, mode) != 0 { throw ProVideoError.system("fchmod", errno: Glibc.errno, path: path) }
    }

    /// fchown(2).
    package func setOwner(_ owner: uid_t, _ group: gid_t) throws {
        if fchown(rawValue, owner, group) != 0 { throw ProVideoError.system("fchown", errno: Glibc.errno, path: path) }
    }

    /// Sets `FS_NOCOW_FL` (`chattr +C`) with the FS_IOC_SETFLAGS ioctl(2); it takes effect on
    /// an empty file only. Returns 0, or -ENOTTY / -EOPNOTSUPP where the filesystem has no
    /// such flag.
    @discardableResult
    package func setNoCOW() -> Int32 { pv_set_nocow(rawValue) }

    /// The file's data extents (the FS_IOC_FIEMAP ioctl(2)): bytes mapped below `below`, and the
    /// end of the last extent (blocks past end of file included).
    package func extents(below: Int64) throws -> (mapped: Int64, end: Int64) {
        var mapped: UInt64 = 0, end: UInt64 = 0
        let rc = pv_extents(rawValue, UInt64(below), &mapped, &end)
        if rc < 0 { throw ProVideoError.system("ioctl(FS_IOC_FIEMAP)", errno: -rc, path: path) }
        return (Int64(mapped), Int64(end))
    }

    /// Where the never-written end of `[from, to)` begins (FS_IOC_FIEMAP): every byte from there
    /// to `to` lies in unwritten extents that no other file shares; `to` when the range ends in
    /// written bytes or a hole. In bytes, within `from ... to`.
    package func unwrittenTail(from: Int64, to: Int64) throws -> Int64 {
        guard from >= 0, to >= from else { return to }
        var start: UInt64 = 0
        let rc = pv_unwritten_tail(rawValue, UInt64(from), UInt64(to), &start)
        if rc < 0 { throw ProVideoError.system("ioctl(FS_IOC_FIEMAP)", errno: -rc, path: path) }
        // The kernel's answer is a number read from disk: outside the range, nothing is unwritten.
        guard start >= UInt64(from), start <= UInt64(to) else { return to }
        return Int64(start)
    }

    /// How many of `length` bytes at `offset` sit in the page cache (mmap(2) + mincore(2)).
    package func cachedBytes(offset: Int64, length: Int64) throws -> Int64 {
        let n = pv_cached_bytes(rawValue, offset, length)
        if n < 0 { throw ProVideoError.system("mincore", errno: Int32(-n), path: path) }
        return n
    }

    /// fcntl(2) `F_OFD_SETLKW` (`wait`) or `F_OFD_SETLK` on byte range [start, start+length):
    /// true when taken, false when another open file description holds it (no wait).
    package func lock(_ start: Int64, _ length: Int64, wait: Bool) throws -> Bool {
        let rc = pv_ofd_lock(rawValue, start, length, wait ? 1 : 0)
        if rc == -EAGAIN && !wait { return false }
        if rc < 0 { throw ProVideoError.system(wait ? "fcntl(F_OFD_SETLKW)" : "fcntl(F_OFD_SETLK)", errno: -rc, path: path) }
        return true
    }

    /// fcntl(2) `F_OFD_SETLK` with `F_RDLCK`: a shared lock, held by many at once; false when
    /// another open file description holds the range exclusively.
    package func lockShared(_ start: Int64, _ length: Int64) throws -> Bool {
        let rc = pv_ofd_lock_shared(rawValue, start, length)
        if rc == -EAGAIN { return false }
        if rc < 0 { throw ProVideoError.system("fcntl(F_OFD_SETLK, F_RDLCK)", errno: -rc, path: path) }
        return true
    }

    /// fcntl(2) `F_OFD_SETLK` with `F_UNLCK`.
    package func unlock(_ start: Int64, _ length: Int64) { _ = pv_ofd_unlock(rawValue, start, length) }

    /// fcntl(2) `F_OFD_GETLK`: whether another open file description holds the range.
    package func isLockedByOthers(_ start: Int64, _ length: Int64) throws -> Bool {
        let rc = pv_ofd_is_locked(rawValue, start, length)
        if rc < 0 { throw ProVideoError.system("fcntl(F_OFD_GETLK)", errno: -rc, path: path) }
        return rc == 1
    }

    /// posix_fadvise(2) `POSIX_FADV_DONTNEED`: drops the range's clean pages from the page
    /// cache, so a transfer in the background does not evict what the machine's foreground work uses,
    /// and a read-back after fsync comes from the filesystem, not from memory. Advice only:
    /// its failure is ignored.
    package func dropCachedPages(offset: Int64, length: Int64) { _ = pv_fadvise_dontneed(rawValue, offset, length) }

    package func sync(_ calls: SystemCalls) throws {
        let rc = calls.fdatasync(rawValue)
        if rc < 0 { throw ProVideoError.system("fdatasync", errno: -rc, path: path) }
    }

    package func truncate(_ length: Int64, _ calls: SystemCalls) throws {
        let rc = calls.ftruncate(rawValue, length)
        if rc < 0 { throw ProVideoError.system("ftruncate", errno: -rc, path: path) }
    }

    /// Writes all of `bytes` at `offset` with pwrite(2), as the write path does (`WriteProgress`):
    /// a short write is resumed from the last multiple of `alignment` it reached (on an
    /// `O_DIRECT` descriptor a write must start aligned, so the partial block is written again
    /// whole), and a result that makes no progress (EINTR, EAGAIN, less than one block) is
    /// retried at most `WriteProgress.maximumRetries` times in a row.
    /// - Parameter alignment: the descriptor's direct-I/O alignment; 1 for buffered I/O.
    /// - Throws: the errno of a failed write; `.ioError` after the retries.
    package func writeAll(_ bytes: UnsafeRawBufferPointer, at offset: Int64, alignment: Int = 1, _ calls: SystemCalls) throws {
        var progress = WriteProgress(length: bytes.count)
        while !progress.isComplete {
            let n = calls.pwrite(rawValue, bytes.baseAddress! + progress.done, bytes.count - progress.done,
                                 offset + Int64(progress.done))
            _ = try progress.apply(Int32(clamping: n), alignment: alignment, call: "pwrite", path: path)
        }
    }

    /// Reads up to `buffer.count` bytes at `offset`; returns how many (0 at end of file).
    /// EINTR and EAGAIN are retried at most `WriteProgress.maximumRetries` times in a row.
    /// - Throws: the errno of a failed read; `.ioError` after the retries.
    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, _ calls: SystemCalls) throws -> Int {
        for _ in 0...WriteProgress.maximumRetries {
            let n = calls.pread(rawValue, buffer.baseAddress!, buffer.count, offset)
            if n == -Int(EINTR) || n == -Int(EAGAIN) { continue }
            if n < 0 { throw ProVideoError.system("pread", errno: Int32(-n), path: path) }
            return n
        }
        throw ProVideoError(.ioError, "a pread of \(path) was interrupted \(WriteProgress.maximumRetries + 1) times in a row",
                            path: path)
    }
}

import CProVideoMount
import CommandLineSupport
import Foundation
import Glibc
import ProVideoStorage

/// libfuse's callbacks (fuse_operations, libfuse 3 high-level API), each a C function that
/// hands the request to `CaptureMount.current` and answers 0 or −errno.
enum MountOperations {
    static var mount: CaptureMount { CaptureMount.current }

    /// Runs a request's body; a thrown error becomes its errno.
    static func answer(_ body: () throws -> Int32) -> Int32 {
        do { return try body() } catch { return -MountError.errno(for: error) }
    }

    static func table() -> fuse_operations {
        var operations = fuse_operations()
        operations.`init` = { _, config in
            // Sizes and names change while a take is written: the kernel asks every time. A
            // capture's opens are direct I/O each (no page cache between a writer and its take);
            // the destination's own files are not, so a shared mmap of them works (issue 39, D4).
            if let config {
                config.pointee.attr_timeout = 0
                config.pointee.entry_timeout = 0
                config.pointee.negative_timeout = 0
                config.pointee.hard_remove = 1
            }
            return nil
        }
        operations.getattr = { path, facts, _ in MountOperations.answer { try MountOperations.getattr(CaptureMount.relative(path), facts!) } }
        operations.readdir = { path, buffer, filler, _, _, _ in MountOperations.answer { try MountOperations.readdir(CaptureMount.relative(path), buffer, filler!) } }
        operations.create = { path, mode, info in MountOperations.answer { try MountOperations.create(CaptureMount.relative(path), mode, info!) } }
        operations.open = { path, info in MountOperations.answer { try MountOperations.openFile(CaptureMount.relative(path), info!) } }
        operations.read = { _, buffer, size, offset, info in
            MountOperations.answer { try MountOperations.read(info!.pointee.fh, UnsafeMutableRawBufferPointer(start: buffer, count: size), Int64(offset)) }
        }
        operations.write = { _, buffer, size, offset, info in
            MountOperations.answer { try MountOperations.write(info!.pointee.fh, UnsafeRawBufferPointer(start: buffer, count: size), Int64(offset)) }
        }
        operations.flush = { _, info in MountOperations.answer { MountOperations.flush(info!.pointee.fh) } }
        operations.release = { _, info in MountOperations.answer { MountOperations.release(info!.pointee.fh) } }
        operations.fsync = { _, dataOnly, info in MountOperations.answer { try MountOperations.fsync(info!.pointee.fh, dataOnly != 0) } }
        operations.statfs = { _, facts in MountOperations.answer { try MountOperations.statfs(facts!) } }
        operations.truncate = { path, size, info in MountOperations.answer { try MountOperations.truncate(CaptureMount.relative(path), Int64(size), info) } }
        operations.unlink = { path in MountOperations.answer { try MountOperations.unlink(CaptureMount.relative(path)) } }
        operations.rename = { from, to, flags in
            MountOperations.answer { try MountOperations.rename(CaptureMount.relative(from), CaptureMount.relative(to), flags) }
        }
        operations.mkdir = { path, mode in
            MountOperations.answer { try CaptureMount.current.asRequester { CaptureMount.failed(Int(mkdirat(CaptureMount.current.directory, CaptureMount.relative(path), mode))) } }
        }
        operations.rmdir = { path in
            MountOperations.answer {
                let name = CaptureMount.relative(path)
                if CaptureMount.current.capturesBelow(name) { return -EBUSY }
                return try CaptureMount.current.asRequester {
                    CaptureMount.failed(Int(unlinkat(CaptureMount.current.directory, name, AT_REMOVEDIR)))
                }
            }
        }
        operations.chmod = { path, mode, _ in
            MountOperations.answer {
                let name = CaptureMount.relative(path)
                if CaptureMount.current.capture(named: name)?.current == .open { return 0 }
                return try CaptureMount.current.asRequester { CaptureMount.failed(Int(fchmodat(CaptureMount.current.directory, name, mode, 0))) }
            }
        }
        operations.utimens = { path, times, _ in
            MountOperations.answer {
                let name = CaptureMount.relative(path)
                if CaptureMount.current.capture(named: name)?.current == .open { return 0 }
                return try CaptureMount.current.asRequester { CaptureMount.failed(Int(utimensat(CaptureMount.current.directory, name, times, AT_SYMLINK_NOFOLLOW))) }
            }
        }
        return operations
    }

    static func getattr(_ name: String, _ facts: UnsafeMutablePointer<stat>) throws -> Int32 {
        if let mounted = mount.capture(named: name), mounted.current != .ended {
            var file = stat()
            file.st_mode = S_IFREG | (mounted.mode & 0o7777)
            file.st_nlink = 1
            file.st_uid = mounted.uid
            file.st_gid = mounted.gid
            file.st_size = Int(mounted.length)
            file.st_blksize = 1 << 20
            file.st_blocks = (file.st_size + 511) / 512
            let seconds = Int(mounted.created.timeIntervalSince1970)
            file.st_mtim = timespec(tv_sec: seconds, tv_nsec: 0)
            file.st_ctim = file.st_mtim
            file.st_atim = file.st_mtim
            facts.pointee = file
            return 0
        }
        return try mount.asRequester { CaptureMount.failed(Int(fstatat(mount.directory, name, facts, AT_SYMLINK_NOFOLLOW))) }
    }

    static func readdir(_ name: String, _ buffer: UnsafeMutableRawPointer?, _ filler: fuse_fill_dir_t) throws -> Int32 {
        let fd = try mount.asRequester { openat(mount.directory, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        guard fd >= 0, let stream = fdopendir(fd) else {
            let error = Glibc.errno
            if fd >= 0 { close(fd) }
            return -error
        }
        defer { closedir(stream) }
        var listed = Set<String>()
        while let entry = Glibc.readdir(stream) {
            let entryName = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            listed.insert(entryName)
            _ = pv_fuse_fill(filler, buffer, entryName)
        }
        for mounted in mount.captures(in: name) {
            let last = (mounted.name as NSString).lastPathComponent
            if !listed.contains(last) { _ = pv_fuse_fill(filler, buffer, last) }
        }
        return 0
    }

    static func create(_ name: String, _ mode: mode_t, _ info: UnsafeMutablePointer<fuse_file_info>) throws -> Int32 {
        guard mode & S_IFMT == S_IFREG || mode & S_IFMT == 0 else { return -EPERM }
        let mounted: MountedCapture
        do {
            mounted = try mount.startCapture(name, mode: mode & 0o7777 & ~pv_fuse_umask())
        } catch {
            // The writer sees only an errno: the daemon's log says why.
            let why = (error as? ProVideoError)?.advised ?? "\(error)"
            mount.report(MountEvent(.notRecorded, name: name, message: "cannot record \(name) for user \(pv_fuse_uid()): \(why)",
                                    uid: pv_fuse_uid(), error: error))
            throw error
        }
        info.pointee.fh = mount.add(.capture(mounted, writing: true))
        pv_fuse_set_direct_io(info)
        return 0
    }

    static func openFile(_ name: String, _ info: UnsafeMutablePointer<fuse_file_info>) throws -> Int32 {
        if let mounted = mount.capture(named: name) {
            let flags = pv_fuse_flags(info)
            let writing = flags & O_ACCMODE != O_RDONLY
            // A take has one writer's open, its creator's, for as long as it is `.open`: a
            // second opener's writes would interleave with the first's (EBUSY), and an O_TRUNC
            // open would overwrite its start (EPERM: a take only grows). A reader (a preview,
            // ffprobe) is let in and does not keep the take from landing. nil: finishing.
            let answer = mounted.lock.withLock { () -> Int32? in
                guard mounted.current == .open else { return nil }
                guard writing else { return 0 }
                return flags & O_TRUNC != 0 && mounted.length > 0 ? -EPERM : -EBUSY
            }
            if let answer {
                if answer == 0 {
                    info.pointee.fh = mount.add(.capture(mounted, writing: false))
                    pv_fuse_set_direct_io(info)
                } else {
                    mount.report(MountEvent(.openRefused, name: name, message: "refused an open for writing of \(name), "
                                            + "being recorded, for user \(pv_fuse_uid())", uid: pv_fuse_uid()))
                }
                return answer
            }
            // Finishing: once landed, the recording is a file of the destination.
            mounted.waitUntilEnded()
        }
        let flags = pv_fuse_flags(info) & ~(O_CREAT | O_EXCL | O_NOCTTY)
        let fd = try mount.asRequester { openat(mount.directory, name, flags | O_CLOEXEC | O_NOFOLLOW) }
        guard fd >= 0 else { return -Glibc.errno }
        info.pointee.fh = mount.add(.file(fd))
        return 0
    }

    static func read(_ number: UInt64, _ buffer: UnsafeMutableRawBufferPointer, _ offset: Int64) throws -> Int32 {
        switch mount.handle(number) {
        case .capture(let mounted, _)?:
            return try mounted.lock.withLock {
                guard mounted.current == .open else { return -EBADF }
                return Int32(try mounted.capture.read(into: buffer, at: offset))
            }
        case .file(let fd)?:
            return CaptureMount.failed(pread(fd, buffer.baseAddress, buffer.count, off_t(offset)))
        case nil:
            return -EBADF
        }
    }

    static func write(_ number: UInt64, _ bytes: UnsafeRawBufferPointer, _ offset: Int64) throws -> Int32 {
        switch mount.handle(number) {
        case .capture(let mounted, let writing)?:
            guard writing else { return -EBADF }
            let started = MonotonicTime.now()
            let written = try mounted.lock.withLock { () -> Int32 in
                guard mounted.current == .open else { return -EBADF }
                return Int32(try mounted.write(bytes, at: offset))
            }
            // A slow request, for a stall's bug report: how much of it the capture took.
            let took = MonotonicTime.now() - started
            if mount.debug && took > 20_000_000 {
                mount.report(MountEvent(.slowWrite, name: mounted.name, message: "a write of \(bytes.count) bytes at \(offset) "
                                        + "of \(mounted.name) took \(took / 1_000_000) ms in the daemon",
                                        bytes: Int64(bytes.count), seconds: Double(took) / 1e9))
            }
            return written
        case .file(let fd)?:
            return CaptureMount.failed(pwrite(fd, bytes.baseAddress, bytes.count, off_t(offset)))
        case nil:
            return -EBADF
        }
    }

    /// One descriptor closed (close(2) sends it for every descriptor, dup(2)'s included): a
    /// capture goes on until `release`, when the last is gone.
    static func flush(_ number: UInt64) -> Int32 { 0 }

    /// The last descriptor of an open closed: a capture whose writer's open this was finishes
    /// (the kernel sends this after close(2) has returned: the recording reaches its
    /// destination moments later, and is seen through the mount meanwhile).
    static func release(_ number: UInt64) -> Int32 {
        switch mount.removeHandle(number) {
        case .capture(let mounted, let writing)?:
            guard writing else { break }
            // Under the capture's lock, so no open comes between the writer's close and the
            // take's `.finishing`.
            mounted.lock.withLock { mount.finishInBackground(mounted) }
        case .file(let fd)?:
            close(fd)
        case nil:
            break
        }
        return 0
    }

    static func fsync(_ number: UInt64, _ dataOnly: Bool) throws -> Int32 {
        switch mount.handle(number) {
        case .capture(let mounted, _)?:
            return try mounted.lock.withLock {
                guard mounted.current == .open else { return -EBADF }
                try mounted.capture.commitAppended()
                return 0
            }
        case .file(let fd)?:
            return CaptureMount.failed(Int(dataOnly ? fdatasync(fd) : Glibc.fsync(fd)))
        case nil:
            return -EBADF
        }
    }

    /// The pool's capacity, so that `df` and a recorder's free-space check see the pool.
    static func statfs(_ facts: UnsafeMutablePointer<statvfs>) throws -> Int32 {
        var base = statvfs()
        _ = fstatvfs(mount.directory, &base)
        let unit: Int64 = 4096
        let total = try mount.pool.initialCapacity, remaining = try mount.pool.remainingCapacity
        base.f_bsize = UInt(unit)
        base.f_frsize = UInt(unit)
        base.f_blocks = fsblkcnt_t(max(total, remaining) / unit)
        base.f_bfree = fsblkcnt_t(max(remaining, 0) / unit)
        base.f_bavail = base.f_bfree
        facts.pointee = base
        return 0
    }

    static func truncate(_ name: String, _ size: Int64, _ info: UnsafeMutablePointer<fuse_file_info>?) throws -> Int32 {
        if let mounted = mount.capture(named: name), mounted.current == .open {
            // A take only grows: truncating it to its own length (O_TRUNC of a new file) is
            // nothing; anything else is refused.
            return mounted.length == size ? 0 : -EPERM
        }
        if let info, case .file(let fd)? = mount.handle(info.pointee.fh) {
            return CaptureMount.failed(Int(ftruncate(fd, off_t(size))))
        }
        return try mount.asRequester {
            let fd = openat(mount.directory, name, O_WRONLY | O_CLOEXEC | O_NOFOLLOW)
            guard fd >= 0 else { return -Glibc.errno }
            defer { close(fd) }
            return CaptureMount.failed(Int(ftruncate(fd, off_t(size))))
        }
    }

    static func unlink(_ name: String) throws -> Int32 {
        if let mounted = mount.capture(named: name), try mount.cancel(mounted) { return 0 }
        return try mount.asRequester { CaptureMount.failed(Int(unlinkat(mount.directory, name, 0))) }
    }

    static func rename(_ from: String, _ to: String, _ flags: UInt32) throws -> Int32 {
        if mount.capture(named: to) != nil { return -EEXIST }
        // A directory holding a capture keeps its name: the capture lands at its path.
        if mount.capturesBelow(from) { return -EBUSY }
        if flags & 2 != 0, mount.capture(named: from) != nil { return -EINVAL }  // RENAME_EXCHANGE
        if try mount.renameCapture(from, to: to) { return 0 }
        return try mount.asRequester {
            pv_rename(mount.directory, from, to, flags)
        }
    }
}

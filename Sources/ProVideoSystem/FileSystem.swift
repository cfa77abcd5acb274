import CProVideo
import Glibc

/// Path-level helpers: existence, directories, durable replacement of small files.
package enum FileSystem {
    /// statx(2); a confined path is not followed if it is a link (`Confinement`).
    package static func facts(_ path: String) throws -> FileFacts {
        var facts = pv_file_facts()
        if Confinement.split(path) != nil {
            let rc = try Confinement.withParent(of: path) { pv_statx_at($0, $1, &facts) }.get()
            if rc < 0 { throw ProVideoError.system("statx", errno: -rc, path: path) }
            return FileFacts(facts)
        }
        let rc = pv_statx(path, &facts)
        if rc < 0 { throw ProVideoError.system("statx", errno: -rc, path: path) }
        return FileFacts(facts)
    }

    /// statvfs(3) `f_favail`: inodes an unprivileged process can still create on the
    /// filesystem holding `path` (XFS and btrfs allocate inodes on demand and report plenty).
    package static func freeInodes(_ path: String) throws -> Int64 {
        var facts = statvfs()
        if statvfs(path, &facts) != 0 { throw ProVideoError.system("statvfs", errno: Glibc.errno, path: path) }
        // btrfs reports no inode counts at all (f_files 0): it has no fixed table to run out of.
        return facts.f_files == 0 ? Int64.max : Int64(facts.f_favail)
    }

    /// statx(2) with `AT_SYMLINK_NOFOLLOW`: the facts of whatever is at `path`, a link itself
    /// included, never what it points to.
    package static func factsWithoutFollowing(_ path: String) throws -> FileFacts {
        var facts = pv_file_facts()
        let rc = pv_statx_at(AT_FDCWD, path, &facts)
        if rc < 0 { throw ProVideoError.system("statx", errno: -rc, path: path) }
        return FileFacts(facts)
    }

    /// statfs(2): the filesystem's type (`f_type`, a magic number of linux/magic.h), bytes
    /// free for unprivileged users (`f_bavail` × `f_bsize`) and its size in bytes.
    package static func space(_ path: String) throws -> (type: Int64, available: Int64, total: Int64) {
        var magic: Int64 = 0, available: UInt64 = 0, total: UInt64 = 0
        let rc = pv_statfs(path, &magic, &available, &total)
        if rc < 0 { throw ProVideoError.system("statfs", errno: -rc, path: path) }
        return (magic, Int64(available), Int64(total))
    }

    /// The block device's queue limits as libblkid reads them (blkid_probe_get_topology(3));
    /// nil when the device cannot be opened (EPERM in a container, say).
    package static func deviceTopology(_ device: String) -> pv_topology? {
        var topology = pv_topology()
        return pv_device_topology(device, &topology) == 0 ? topology : nil
    }

    /// access(2) with `F_OK`; for a confined path, whether anything is at `path` (a link included).
    package static func exists(_ path: String) -> Bool {
        Confinement.split(path) != nil ? (try? facts(path)) != nil : access(path, F_OK) == 0
    }

    /// Whether anything is at `path` (for a confined path, a link included), on proof: statx(2)
    /// answering `ENOENT` is "absent"; any other failure is not an answer and is thrown, so
    /// that what a caller acts on is never a look that failed.
    /// - Throws: statx's error other than `ENOENT` (`.permissionDenied` for `EACCES`/`EPERM`,
    ///   `.ioError` for the rest: `EIO`, `ELOOP`, `ENOTDIR`, …).
    package static func isPresent(_ path: String) throws -> Bool {
        do {
            _ = try facts(path)
            return true
        } catch let error as ProVideoError where error.errno == ENOENT {
            return false
        }
    }

    /// `isPresent(path)` after the system calls' `lookAt` seam, which a test fails as statx would.
    package static func isPresent(_ path: String, _ calls: SystemCalls) throws -> Bool {
        let rc = calls.lookAt(path)
        if rc == -ENOENT { return false }
        if rc < 0 { throw ProVideoError.system("statx", errno: -rc, path: path) }
        return try isPresent(path)
    }

    /// The names in the directory `path` (`.` and `..` left out), on proof: nil only when
    /// nothing is at `path` (`isPresent`).
    /// - Throws: `.ioError` "cannot list PATH (why); `consequence`" when it is there and cannot
    ///   be listed or looked at: an empty answer would read as "nothing there".
    package static func entries(_ path: String, consequence: String) throws -> [String]? {
        func unlisted(_ why: String) -> ProVideoError {
            ProVideoError(.ioError, "cannot list \(path) (\(why)); \(consequence)", path: path)
        }
        do {
            guard try isPresent(path) else { return nil }
        } catch let error as ProVideoError {
            throw unlisted(error.message)
        }
        guard let directory = opendir(path) else { throw unlisted("opendir: \(Errno.description(Glibc.errno))") }
        defer { closedir(directory) }
        var names: [String] = []
        while true {
            Glibc.errno = 0
            guard let entry = readdir(directory) else { break }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        if Glibc.errno != 0 { throw unlisted("readdir: \(Errno.description(Glibc.errno))") }
        return names
    }

    /// lstat(2): whether anything, a dangling symbolic link included, is at `path`.
    package static func existsWithoutFollowing(_ path: String) -> Bool {
        if Confinement.split(path) != nil { return exists(path) }
        var st = stat()
        return lstat(path, &st) == 0
    }

    /// access(2) with `W_OK`.
    package static func isWritable(_ path: String) -> Bool { Glibc.access(path, W_OK) == 0 }

    /// realpath(3): `path` with every symbolic link, `.` and `..` resolved; nil when it does
    /// not exist.
    package static func realPath(_ path: String) -> String? {
        guard let real = realpath(path, nil) else { return nil }
        defer { free(real) }
        return String(cString: real)
    }

    package static func isDirectory(_ path: String) -> Bool {
        if Confinement.split(path) != nil {
            return (try? facts(path)).map { $0.mode & UInt32(S_IFMT) == UInt32(S_IFDIR) } ?? false
        }
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }

    /// mkdir(2), mode 0700 until its owner gives it another; an existing directory is fine.
    package static func makeDirectory(_ path: String) throws {
        let rc = try Confinement.withParent(of: path) { pv_mkdirat($0, $1, 0o700) }.get()
        if rc < 0 && rc != -EEXIST { throw ProVideoError.system("mkdir", errno: -rc, path: path) }
    }

    /// access(2) for read, write and search: 0, or the errno that refuses it.
    package static func accessError(_ path: String) -> Int32 {
        Glibc.access(path, R_OK | W_OK | X_OK) == 0 ? 0 : Glibc.errno
    }

    /// unlink(2); a missing file is fine. For a confined path, through its directory opened
    /// beneath the confined one (`Confinement`).
    package static func remove(_ path: String) throws { try unlink(path, directory: false) }

    package static func removeDirectory(_ path: String) throws { try unlink(path, directory: true) }

    /// unlinkat(2) of a file or an empty directory; what is already gone is fine.
    private static func unlink(_ path: String, directory: Bool) throws {
        switch Confinement.withParent(of: path, { pv_unlinkat($0, $1, directory ? 1 : 0) }) {
        case .failure(let error) where error.errno == ENOENT: return
        case .failure(let error): throw error
        case .success(let rc) where rc < 0 && rc != -ENOENT:
            throw ProVideoError.system(directory ? "rmdir" : "unlink", errno: -rc, path: path)
        case .success: return
        }
    }

    /// rename(2), replacing the target (for the library's own state files only).
    package static func rename(_ from: String, _ to: String) throws {
        let rc = try Confinement.withParent(of: from) { fromDirectory, fromName in
            Confinement.withParent(of: to) { pv_renameat(fromDirectory, fromName, $0, $1) }
        }.get().get()
        if rc < 0 { throw ProVideoError.system("rename", errno: -rc, path: from) }
    }

    /// fsync(2) on a directory, so that a rename or create in it survives a power cut.
    package static func syncDirectory(_ path: String, _ calls: SystemCalls) throws {
        let fd = try FileDescriptor.open(path, O_RDONLY | O_DIRECTORY)
        let rc = calls.fsync(fd.rawValue)
        if rc < 0 { throw ProVideoError.system("fsync", errno: -rc, path: path) }
    }

    package static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    package static func lastComponent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }

    /// Makes `path` absolute against the working directory and removes `.`, `..` and empty
    /// components, without following symbolic links.
    package static func absolute(_ path: String) -> String {
        var base = path.hasPrefix("/") ? "" : currentDirectory()
        base += "/" + path
        var parts: [Substring] = []
        for part in base.split(separator: "/") {
            if part == "." { continue }
            if part == ".." { _ = parts.popLast(); continue }
            parts.append(part)
        }
        return "/" + parts.joined(separator: "/")
    }

    static func currentDirectory() -> String {
        guard let cwd = getcwd(nil, 0) else { return "/" }
        defer { free(cwd) }
        return String(cString: cwd)
    }

    /// The most a small file (a state file, a sysfs value) may hold, in bytes.
    package static let smallFileLimit = 1 << 20

    /// Reads a whole small file, at most `smallFileLimit` bytes. Opened `O_NONBLOCK`: a FIFO in
    /// its place is refused, never waited on.
    /// A file of a confined directory is read only as evidence (`EvidenceFile`): one link,
    /// so a second name of another file there is refused.
    /// - Throws: the open's or read's error; `.corruptState` when it is not a regular file,
    ///   holds more than the limit, or (confined) has more than one link.
    package static func readSmallFile(_ path: String) throws -> [UInt8] { try readSmallFileWithFacts(path).bytes }

    /// `readSmallFile`, with the facts of the file it read (from its descriptor: the file read,
    /// not whatever is at `path` afterwards).
    package static func readSmallFileWithFacts(_ path: String) throws -> (bytes: [UInt8], facts: FileFacts) {
        let fd = try FileDescriptor.open(path, O_RDONLY | O_NONBLOCK)
        let facts = try fd.facts()
        if Confinement.split(path) != nil, let refusal = EvidenceFile.refusal(facts, expected: S_IFREG, path: path) {
            throw refusal
        }
        let procfs = path.hasPrefix("/proc/") || path.hasPrefix("/sys/")
        guard facts.mode & UInt32(S_IFMT) == UInt32(S_IFREG), procfs || facts.size <= UInt64(smallFileLimit) else {
            throw ProVideoError(.corruptState, "\(path) is not a small regular file (\(facts.size) bytes; at most "
                                + "\(smallFileLimit)): it cannot be a state file", path: path)
        }
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        var offset: Int64 = 0
        while true {
            let n = try chunk.withUnsafeMutableBytes { try fd.read(into: $0, at: offset, .live) }
            if n == 0 { return (result, facts) }
            result += chunk[0..<n]
            if result.count > smallFileLimit {
                throw ProVideoError(.corruptState, "\(path) holds more than \(smallFileLimit) bytes", path: path)
            }
            offset += Int64(n)
        }
    }

    /// The decimal integer a sysfs or procfs file holds (surrounding whitespace ignored); nil
    /// when the file is missing or holds something else.
    package static func readInteger(_ path: String) -> Int? {
        guard let bytes = try? readSmallFile(path) else { return nil }
        let words = String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isWhitespace)
        return words.count == 1 ? Int(words[0]) : nil
    }
}

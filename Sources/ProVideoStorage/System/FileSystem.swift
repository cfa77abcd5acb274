import CProVideo
import Glibc

/// Path-level helpers: existence, directories, durable replacement of small files.
enum FileSystem {
    static func facts(_ path: String) throws -> pv_file_facts {
        var facts = pv_file_facts()
        let rc = pv_statx(path, &facts)
        if rc < 0 { throw ProVideoError.system("statx", errno: -rc, path: path) }
        return facts
    }

    static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    static func isDirectory(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }

    static func makeDirectory(_ path: String) throws {
        if mkdir(path, 0o755) != 0 && Glibc.errno != EEXIST {
            throw ProVideoError.system("mkdir", errno: Glibc.errno, path: path)
        }
    }

    static func remove(_ path: String) throws {
        if unlink(path) != 0 && Glibc.errno != ENOENT {
            throw ProVideoError.system("unlink", errno: Glibc.errno, path: path)
        }
    }

    static func removeDirectory(_ path: String) throws {
        if rmdir(path) != 0 && Glibc.errno != ENOENT {
            throw ProVideoError.system("rmdir", errno: Glibc.errno, path: path)
        }
    }

    /// rename(2), replacing the target (used only for the pool's own files).
    static func rename(_ from: String, _ to: String) throws {
        if Glibc.rename(from, to) != 0 { throw ProVideoError.system("rename", errno: Glibc.errno, path: from) }
    }

    /// fsync(2) on a directory, so that a rename or create in it survives a power cut.
    static func syncDirectory(_ path: String, _ calls: SystemCalls) throws {
        let fd = try FileDescriptor.open(path, O_RDONLY | O_DIRECTORY)
        let rc = calls.fsync(fd.rawValue)
        if rc < 0 { throw ProVideoError.system("fsync", errno: -rc, path: path) }
    }

    static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    static func lastComponent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }

    /// Makes `path` absolute against the working directory and removes `.`, `..` and empty
    /// components, without following symbolic links.
    static func absolute(_ path: String) -> String {
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

    /// Reads a whole small file.
    static func readSmallFile(_ path: String) throws -> [UInt8] {
        let fd = try FileDescriptor.open(path, O_RDONLY)
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        var offset: Int64 = 0
        while true {
            let n = try chunk.withUnsafeMutableBytes { try fd.read(into: $0, at: offset, .live) }
            if n == 0 { return result }
            result += chunk[0..<n]
            offset += Int64(n)
        }
    }

    /// The decimal integer a sysfs or procfs file holds (surrounding whitespace ignored); nil
    /// when the file is missing or holds something else.
    static func readInteger(_ path: String) -> Int? {
        guard let bytes = try? readSmallFile(path) else { return nil }
        let words = String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isWhitespace)
        return words.count == 1 ? Int(words[0]) : nil
    }

    /// Replaces `path` with `bytes` crash-consistently: write a temporary file, flush it,
    /// rename it over `path`, flush the directory. A reader sees the old or the new content.
    static func replaceDurably(_ path: String, with bytes: [UInt8], _ calls: SystemCalls) throws {
        let temporary = path + ".tmp"
        do {
            let fd = try FileDescriptor.open(temporary, O_WRONLY | O_CREAT | O_TRUNC)
            try bytes.withUnsafeBytes { try fd.writeAll($0, at: 0, calls) }
            let rc = calls.fsync(fd.rawValue)
            if rc < 0 { throw ProVideoError.system("fsync", errno: -rc, path: temporary) }
        }
        try rename(temporary, path)
        try syncDirectory(parent(of: path), calls)
    }
}

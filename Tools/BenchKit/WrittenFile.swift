import Glibc
import ProVideoStorage

/// A new file the buffered and direct modes append to; it must not exist yet.
final class WrittenFile {
    let path: String
    private let fd: Int32
    private var closed = false

    init(path: String, direct: Bool) throws {
        let flags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC
        let fd = direct ? open(path, flags | OpenFlags.direct, 0o644) : open(path, flags, 0o644)
        guard fd >= 0 else { throw BenchError("cannot create \(path): \(Self.describe(direct ? -fd : errno))") }
        self.path = path
        self.fd = fd
    }

    deinit {
        if !closed {
            Glibc.close(fd)
            unlink(path)
        }
    }

    /// Appends all of `bytes`, resuming after short writes.
    func write(_ bytes: UnsafeRawBufferPointer) throws {
        var done = 0
        while done < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + done, bytes.count - done)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw BenchError("write to \(path) failed: \(Self.describe(n < 0 ? errno : EIO))") }
            done += n
        }
    }

    func truncate(_ length: Int64) throws {
        guard ftruncate(fd, off_t(length)) == 0 else { throw BenchError("ftruncate \(path): \(Self.describe(errno))") }
    }

    /// fsync, unlink and close: the bytes reached the disk, then the space is given back. The
    /// unlink comes before the close so that a file of a capture mount is cancelled, not landed.
    func flushAndRemove() throws {
        let synced = fsync(fd) == 0 ? 0 : errno
        let removed = unlink(path) == 0 ? 0 : errno
        Glibc.close(fd)
        closed = true
        if synced != 0 { throw BenchError("fsync \(path): \(Self.describe(synced))") }
        if removed != 0 { throw BenchError("removing \(path): \(Self.describe(removed))") }
    }

    static func describe(_ code: Int32) -> String { String(cString: strerror(code)) }
}

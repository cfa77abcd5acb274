import Glibc
import ProVideoSystem

/// Proves that a directory can host a pool: direct I/O really bypasses the page cache there and
/// `fallocate` works. An `O_DIRECT` open that succeeds proves nothing: tmpfs accepts it and even
/// accepts misaligned direct writes, and btrfs silently falls back to buffered I/O for
/// checksummed files. So the probe writes 1 MiB with `O_DIRECT` into a preallocated file and
/// asks the kernel (mmap + mincore(2)) how much of it sits in the page cache: none on ext4,
/// XFS and NOCOW btrfs, all of it on tmpfs.
enum DirectIOProbe {
    static let probeLength = 1 << 20

    /// Returns nil when the directory can host a pool, else the reason it cannot.
    static func reasonUnsupported(directory: String, facts: StorageFacts) -> String? {
        if let name = StorageFacts.memoryFilesystems[facts.filesystemMagic] {
            return "\(directory) is on \(name), which keeps every file in memory (the page cache): "
                + "direct I/O cannot bypass it and a power cut loses the recording. "
                + "Put the pool on a disk filesystem (ext4, XFS, btrfs)."
        }
        let path = directory + "/.provideo-probe-\(ProcessIdentity.pid)"
        defer { try? FileSystem.remove(path) }
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(path, O_RDWR | O_CREAT | O_EXCL, mode: 0o600, direct: true)
        } catch let error as ProVideoError {
            return error.errno == EINVAL
                ? "the \(facts.filesystem) filesystem at \(directory) refuses O_DIRECT opens"
                : "cannot create a file in \(directory): \(error.message)"
        } catch { return "\(error)" }
        if facts.isBtrfs { fd.setNoCOW() }
        let length = Int64(probeLength)
        let rc = SystemCalls.live.fallocate(fd.rawValue, false, 0, length)
        if rc < 0 {
            return "fallocate does not work on \(facts.filesystem) at \(directory): " + Errno.description(-rc)
        }
        guard let buffer = AlignedBuffer(length: probeLength, alignment: facts.directIOAlignment.io) else {
            return "cannot allocate the probe buffer"
        }
        let pattern = UInt8(truncatingIfNeeded: ProcessIdentity.pid | 1)
        buffer.bytes.initializeMemory(as: UInt8.self, repeating: pattern)
        do {
            try fd.writeAll(UnsafeRawBufferPointer(buffer.bytes), at: 0, alignment: facts.directIOAlignment.io, .live)
            try fd.sync(.live)
        } catch let error as ProVideoError {
            return "an aligned direct write failed on \(facts.filesystem) at \(directory): \(error.message)"
        } catch { return "\(error)" }
        let cached: Int64
        do {
            cached = try fd.cachedBytes(offset: 0, length: length)
        } catch {
            return "cannot tell whether direct I/O bypasses the page cache at \(directory): \(error)"
        }
        if cached > 0 {
            return "direct writes on \(facts.filesystem) at \(directory) went through the page cache "
                + "(\(cached) of \(length) bytes cached): recordings would stall on writeback"
        }
        return nil
    }
}

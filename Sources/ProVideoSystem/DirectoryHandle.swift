import CProVideo
import Glibc

/// A directory resolved once, into a descriptor. Every later step names a file in it as
/// `/proc/self/fd/N/NAME`: the kernel starts that lookup at the directory the descriptor holds,
/// so a user who renames the directory, or swaps a component of its path for a symbolic link,
/// changes nothing for the steps that follow (Docs/SECURITY.md, "Resolved once"). The same
/// `SystemCalls` seam (rename, link) then serves paths and descriptors alike.
package final class DirectoryHandle {
    package let descriptor: FileDescriptor
    /// The path it was opened by, for messages.
    package let path: String

    private init(descriptor: FileDescriptor, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    /// open(2) with `O_RDONLY | O_DIRECTORY`, resolved with the calling thread's identity (run
    /// it as the user it acts for, to resolve the path as they would).
    /// - Throws: the open's errno (`ENOENT`, `EACCES`, `ENOTDIR`…).
    package static func open(_ path: String) throws -> DirectoryHandle {
        DirectoryHandle(descriptor: try FileDescriptor.open(path, O_RDONLY | O_DIRECTORY), path: path)
    }

    /// The name `name` in this very directory, for path-taking system calls.
    package func path(of name: String) -> String { "/proc/self/fd/\(descriptor.rawValue)/\(name)" }

    /// `name` as messages show it.
    package func display(_ name: String) -> String { path == "/" ? "/" + name : path + "/" + name }

    package func facts() throws -> FileFacts { try descriptor.facts() }

    /// statx(2) of `name` without following a link; nil when nothing is there.
    package func facts(of name: String) -> FileFacts? {
        var facts = pv_file_facts()
        return pv_statx_at(descriptor.rawValue, name, &facts) == 0 ? FileFacts(facts) : nil
    }

    /// Whether `name` is `file` itself (same device and inode), not a link or another file.
    package func holds(_ name: String, _ file: FileFacts) -> Bool {
        guard let there = facts(of: name) else { return false }
        return there.isSameFile(as: file) && there.mode & UInt32(S_IFMT) == UInt32(S_IFREG)
    }

    /// openat(2) of `name` with `O_NOFOLLOW` added.
    package func open(_ name: String, _ flags: Int32, mode: mode_t = 0o666) throws -> FileDescriptor {
        try FileDescriptor.open(path(of: name), flags | O_NOFOLLOW, mode: mode, shownAs: display(name))
    }

    /// unlinkat(2) of `name`; a missing name is fine.
    package func remove(_ name: String) throws {
        let rc = pv_unlinkat(descriptor.rawValue, name, 0)
        if rc < 0 && rc != -ENOENT { throw ProVideoError.system("unlink", errno: -rc, path: display(name)) }
    }

    /// renameat(2) of `from` to `to`, both in this directory, replacing `to`; 0 or -errno.
    package func rename(_ from: String, to: String) -> Int32 {
        pv_renameat(descriptor.rawValue, from, descriptor.rawValue, to)
    }

    /// fsync(2) of the directory: a rename or create in it survives a power cut.
    package func sync(_ calls: SystemCalls) throws {
        let rc = calls.fsync(descriptor.rawValue)
        if rc < 0 { throw ProVideoError.system("fsync", errno: -rc, path: path) }
    }

    /// Whether this directory is on the filesystem (device) of `other`.
    package func isOnDevice(of other: FileFacts) throws -> Bool {
        let mine = try facts()
        return mine.deviceMajor == other.deviceMajor && mine.deviceMinor == other.deviceMinor
    }
}

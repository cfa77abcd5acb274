import Glibc
import ProVideoSystem

/// The one durable small-file write of the pool's state (`pool.json`, capture journals, held
/// recordings' notes, landing records, the recovered log).
enum DurableFile {
    /// Replaces `path` with `bytes` crash-consistently: write a temporary file, flush it,
    /// rename it over `path`, flush the directory. A reader sees the old or the new content.
    /// A file that fails to be written is removed, so a full filesystem leaves no `.tmp` behind.
    /// A full filesystem releases the pool's spare (`MetadataSpare`) and tries once more.
    static func replace(_ path: String, with bytes: [UInt8], _ calls: SystemCalls, access: PoolAccess) throws {
        guard let spare = access.spare else { return try replaceOnce(path, with: bytes, calls, access: access) }
        try spare.retryingOnFullFilesystem(calls) { try replaceOnce(path, with: bytes, calls, access: access) }
    }

    private static func replaceOnce(_ path: String, with bytes: [UInt8], _ calls: SystemCalls, access: PoolAccess) throws {
        let temporary = path + ".tmp"
        do {
            // Made anew, exclusively: a file or hard link planted at the temporary name is
            // removed, never truncated or written through.
            try FileSystem.remove(temporary)
            let fd = try access.openCreating(temporary, O_WRONLY | O_EXCL)
            try bytes.withUnsafeBytes { try fd.writeAll($0, at: 0, calls) }
            let rc = calls.fsync(fd.rawValue)
            if rc < 0 { throw ProVideoError.system("fsync", errno: -rc, path: temporary) }
            // A temporary whose close failed is not renamed over what the file held.
            try fd.close(calls)
            try FileSystem.rename(temporary, path)
        } catch {
            try? FileSystem.remove(temporary)
            throw error
        }
        try FileSystem.syncDirectory(FileSystem.parent(of: path), calls)
    }
}

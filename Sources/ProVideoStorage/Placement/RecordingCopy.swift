import Glibc
import ProVideoSystem
import ProVideoJournal

/// Copies a recording to a destination on another filesystem (rename(2) fails there with
/// `EXDEV`). The copy goes to a hidden temporary name beside the destination with
/// copy_file_range(2), resuming exactly where a partial copy stopped and asking only for the
/// bytes still left; if copy_file_range fails it goes on with read/write from the same
/// offset. The copy is flushed, its pages dropped from the page cache, and checked (length and
/// SHA-256 of what the device returns, against the source) before it
/// is published at the destination without clobbering (`NoClobberPublish`), so no partial
/// file is ever visible at the destination path.
enum RecordingCopy {
    static let chunk = 1 << 20

    /// Copies to `name` in `directory`; run it as the recording's owner (`RecordingOwner`), who
    /// then owns the copy. `control` gets the copy's and the verification's progress and may
    /// stop either (the temporary is removed). The temporary is created exclusively (`O_EXCL | O_NOFOLLOW`): a file
    /// or link planted at its predictable name is removed, never written through.
    /// - Returns: which file the copy is (its device, inode, length and SHA-256), for the
    ///   journal's proof of where the take went.
    /// - Throws: `.destinationExists` (nothing is overwritten), `.ioError` when a copy step
    ///   or the verification fails, `.cancelled`. The temporary file is removed on every failure.
    static func copy(_ source: FileDescriptor, length: Int64, to name: String, in directory: DirectoryHandle, tag: String,
                     calls: SystemCalls, control: OperationControl) throws -> FileIdentity {
        let temporary = temporaryName(for: name, tag: tag)
        if let existing = try copy(of: source, length: length, at: name, in: directory, calls: calls, control: control) {
            // A copy killed after its final rename, salvaged again: the destination is this copy.
            return existing
        }
        try directory.remove(temporary)
        var created: FileFacts?
        do {
            // 0666 less the umask, as the rename path gives and as `touch` would.
            let target = try directory.open(temporary, O_RDWR | O_CREAT | O_EXCL, mode: 0o666)
            created = try target.facts()
            try transfer(source, to: target, length: length, calls: calls, control: control)
            let synced = calls.fsync(target.rawValue)
            if synced < 0 { throw ProVideoError.system("fsync", errno: -synced, path: directory.display(temporary)) }
            // Verify what the device returns, not the page cache the copy just filled: its clean
            // pages go, so the digest below reads them back from the disk (as landing does).
            target.dropCachedPages(offset: 0, length: length)
            let copied = Int64(try target.facts().size)
            guard copied == length else {
                throw ProVideoError(.ioError, "the copy at \(directory.display(temporary)) has \(copied) bytes, expected "
                                    + "\(length)", path: directory.display(temporary))
            }
            let copiedDigest = try digest(target, length: length, calls: calls, control: control)
            guard try digest(source, length: length, calls: calls, control: control) == copiedDigest else {
                throw ProVideoError(.ioError, "the copy at \(directory.display(temporary)) differs from the recording "
                                    + "(SHA-256)", path: directory.display(temporary))
            }
            // The last point where an async caller's cancellation is honoured: after the publish
            // the copy is the recording.
            try control.checkpoint("the copy to \(directory.display(name))")
            try NoClobberPublish(calls: calls).publish(target, from: temporary, as: name, in: directory)
            return FileIdentity(try target.facts(), length: length, sha256: hex(copiedDigest))
        } catch {
            if let created, directory.holds(temporary, created) { try? directory.remove(temporary) }
            throw error
        }
    }

    /// The hidden name a copy is written under beside `destination` until it is published:
    /// ".<name>.provideo-<tag>.partial", shortened to fit NAME_MAX.
    static func temporaryPath(for destination: String, tag: String) -> String {
        "\(FileSystem.parent(of: destination))/\(temporaryName(for: FileSystem.lastComponent(of: destination), tag: tag))"
    }

    /// `temporaryPath`'s last component.
    static func temporaryName(for name: String, tag: String) -> String {
        let suffix = ".provideo-\(DerivedName.shortened(tag, toBytes: 64)).partial"
        return "." + DerivedName.shortened(name, toBytes: DerivedName.maximumBytes - 1 - suffix.utf8.count) + suffix
    }

    /// Which file `name` in `directory` is, when it is a regular file (not followed) with
    /// exactly `source`'s first `length` bytes; nil when it is not.
    static func copy(of source: FileDescriptor, length: Int64, at name: String, in directory: DirectoryHandle,
                     calls: SystemCalls, control: OperationControl) throws -> FileIdentity? {
        guard let facts = directory.facts(of: name), facts.mode & UInt32(S_IFMT) == UInt32(S_IFREG),
              Int64(facts.size) == length else { return nil }
        let existing = try directory.open(name, O_RDONLY | O_NONBLOCK)
        let existingDigest = try digest(existing, length: length, calls: calls, control: control)
        guard try digest(source, length: length, calls: calls, control: control) == existingDigest else { return nil }
        return FileIdentity(try existing.facts(), length: length, sha256: hex(existingDigest))
    }

    static func hex(_ digest: [UInt8]) -> String {
        digest.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }

    /// Copies bytes [0, length) from `source` to the same offsets of `target`.
    static func transfer(_ source: FileDescriptor, to target: FileDescriptor, length: Int64, calls: SystemCalls,
                         control: OperationControl) throws {
        var offset: Int64 = 0
        var kernelCopy = true
        var buffer = [UInt8](repeating: 0, count: chunk)
        while offset < length {
            try control.checkpoint("the copy to \(target.path)")
            if kernelCopy {
                let n = calls.copyFileRange(source.rawValue, offset, target.rawValue, offset, Int(length - offset))
                if n > 0 {
                    offset += Int64(n)
                    control.report(.copying, offset, length)
                    continue
                }
                if n == -Int(EINTR) || n == -Int(EAGAIN) { continue }
                // 0 before the end, EXDEV, EINVAL, ENOSYS, EOPNOTSUPP, EIO…: go on by hand.
                kernelCopy = false
                continue
            }
            let want = Int(min(Int64(chunk), length - offset))
            let n = try buffer.withUnsafeMutableBytes {
                try source.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<want]), at: offset, calls)
            }
            guard n > 0 else { throw ProVideoError(.ioError, "\(source.path) ended at \(offset) of \(length) bytes", path: source.path) }
            try buffer.withUnsafeBytes { try target.writeAll(UnsafeRawBufferPointer(rebasing: $0[0..<n]), at: offset, calls) }
            offset += Int64(n)
            control.report(.copying, offset, length)
        }
    }

    /// SHA-256 of bytes [0, length) of `file`.
    static func digest(_ file: FileDescriptor, length: Int64, calls: SystemCalls, control: OperationControl) throws -> [UInt8] {
        let hash = try SHA256()
        try read(file, from: 0, to: length, calls: calls, control: control) { hash.update($0) }
        return hash.finish()
    }

    /// Reads bytes [start, end) of `file` (fewer when it ends first) in chunks, handing each to
    /// `body`; `control` gets the bytes read as `verifying` progress and may stop the read.
    static func read(_ file: FileDescriptor, from start: Int64, to end: Int64, calls: SystemCalls,
                     control: OperationControl, _ body: (UnsafeRawBufferPointer) -> Void) throws {
        var buffer = [UInt8](repeating: 0, count: chunk)
        var offset = start
        while offset < end {
            try control.checkpoint("the verification of \(file.path)")
            let want = Int(min(Int64(chunk), end - offset))
            let n = try buffer.withUnsafeMutableBytes {
                try file.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<want]), at: offset, calls)
            }
            if n == 0 { break }
            buffer.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            offset += Int64(n)
            control.report(.verifying, offset - start, end - start)
        }
    }
}

import ProVideoSystem
import ProVideoWritePath

/// Patches of bytes already appended (a muxer rewriting sizes and headers), and reads of them
/// back, in memory or through the aligned blocks on disk.
extension Capture {
    /// Rewrites bytes already appended, at any offset and length (a muxer patching sizes and
    /// headers). Bytes still in a buffer are patched in memory, after a commit's flush of that
    /// buffer in flight has landed (so the flush carries the old bytes whole, never a mix);
    /// bytes on disk are patched by reading and rewriting the aligned blocks around them,
    /// after the writes in flight land.
    /// - Throws: `.invalidArgument` when the range is not inside `[0, length)`; the capture's
    ///   first error; `.captureClosed`.
    public func patch(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws {
        try enterCall()
        defer { leaveCall() }
        try checkOpen()
        let end = offset + Int64(bytes.count)
        guard offset >= 0, end <= length else {
            throw ProVideoError(.invalidArgument, "cannot patch bytes \(offset)..<\(end): the recording has \(length) bytes")
        }
        guard !bytes.isEmpty else { return }
        let deadline = Self.now() + Self.stallLimit
        try guarded { try writer.patch(bytes, at: offset, until: deadline) }
    }

    /// Rewrites `bytes` at `offset`; see `patch(_:at:)`.
    public func patch(_ bytes: [UInt8], at offset: Int64) throws {
        try bytes.withUnsafeBytes { try patch($0, at: offset) }
    }

    /// The name of `patch(_:at:)` before 1.1: it reads as an append, which it is not.
    @available(*, deprecated, renamed: "patch(_:at:)")
    public func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws { try patch(bytes, at: offset) }

    @available(*, deprecated, renamed: "patch(_:at:)")
    public func write(_ bytes: [UInt8], at offset: Int64) throws { try patch(bytes, at: offset) }

    /// Reads bytes of the recording back (a mounted file's `read(2)`, e.g. a muxer moving its
    /// index to the front): `buffer.count` bytes from `offset`, fewer at the end. Bytes still
    /// in the buffer being filled come from memory; the rest from the file, once the writes in
    /// flight have landed (a direct read of the aligned blocks around them). Waits for the disk.
    /// - Returns: the bytes read, 0 at or past `length`.
    /// - Throws: `.invalidArgument` for a negative offset; the capture's first error;
    ///   `.ioError`; `.captureClosed`.
    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        try enterCall()
        defer { leaveCall() }
        try checkOpen()
        guard offset >= 0 else { throw ProVideoError(.invalidArgument, "cannot read at offset \(offset)") }
        let end = min(length, offset + Int64(buffer.count))
        guard end > offset else { return 0 }
        let deadline = Self.now() + Self.stallLimit
        try guarded { try writer.read(into: buffer, at: offset, end: end, until: deadline) }
        return Int(end - offset)
    }
}

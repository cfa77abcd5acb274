import Foundation
import ProVideoSystem

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
        statistics.patches += 1
        patchedSinceCommit = true
        let deadline = Self.now() + Self.stallLimit
        try guarded {
            try waitUntil("the flush of the patched buffer", until: deadline) { !ring.flushCovers(offset..<end) }
            let buffered = ring.filling.map { ring.slots[$0].offset } ?? length
            if end > buffered, let slot = ring.filling {
                let from = max(offset, buffered)
                (ring.base(of: slot) + Int(from - buffered))
                    .copyMemory(from: bytes.baseAddress! + Int(from - offset), byteCount: Int(end - from))
            }
            if offset < buffered { try patchOnDisk(bytes, at: offset, end: min(end, buffered), until: deadline) }
        }
    }

    /// Rewrites `offset..<end` of `bytes` in the file, a window of aligned blocks at a time.
    private func patchOnDisk(_ bytes: UnsafeRawBufferPointer, at offset: Int64, end: Int64, until deadline: UInt64) throws {
        try withBlocksOnDisk(offset..<end, until: deadline) { window, block, part in
            (window.baseAddress! + Int(part.lowerBound - block))
                .copyMemory(from: bytes.baseAddress! + Int(part.lowerBound - offset), byteCount: part.count)
            try data.writeAll(UnsafeRawBufferPointer(window), at: block, alignment: alignment, host.calls)
        }
    }

    /// Reads the file's aligned blocks around `range` into `patchBuffer`, a window of at most
    /// one buffer at a time, once the writes in flight have landed (direct I/O reads whole
    /// blocks); `body` gets each window, the file offset it starts at and the part of `range`
    /// it holds. Shared by patches on disk and read-back.
    private func withBlocksOnDisk(_ range: Range<Int64>, until deadline: UInt64,
                                  _ body: (UnsafeMutableRawBufferPointer, _ block: Int64, _ part: Range<Int64>) throws -> Void) throws {
        try waitUntil("the writes in flight", until: deadline) { ring.isIdle && commits.isIdle }
        let align = Int64(alignment)
        var block = range.lowerBound / align * align
        while block < range.upperBound {
            let span = Int(min(Int64(ring.slotSize), (range.upperBound - block + align - 1) / align * align))
            let window = UnsafeMutableRawBufferPointer(rebasing: patchBuffer.bytes[0..<span])
            var read = 0
            while read < span {
                let n = try data.read(into: UnsafeMutableRawBufferPointer(rebasing: window[read...]), at: block + Int64(read), host.calls)
                guard n > 0 else { throw ProVideoError(.ioError, "reading back \(data.path) ended early", path: data.path) }
                read += n
            }
            try body(window, block, max(range.lowerBound, block)..<min(range.upperBound, block + Int64(span)))
            block += Int64(span)
        }
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
        try guarded {
            let buffered = ring.filling.map { ring.slots[$0].offset } ?? length
            if end > buffered, let slot = ring.filling {
                let from = max(offset, buffered)
                (buffer.baseAddress! + Int(from - offset))
                    .copyMemory(from: ring.base(of: slot) + Int(from - buffered), byteCount: Int(end - from))
            }
            guard offset < buffered else { return }
            try withBlocksOnDisk(offset..<min(end, buffered), until: deadline) { window, block, part in
                (buffer.baseAddress! + Int(part.lowerBound - offset))
                    .copyMemory(from: window.baseAddress! + Int(part.lowerBound - block), byteCount: part.count)
            }
        }
        return Int(end - offset)
    }
}

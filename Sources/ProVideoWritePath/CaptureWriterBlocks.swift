import ProVideoSystem

/// Patches of bytes already appended and reads of them back, in memory or through the
/// aligned blocks on disk (see `Capture.patch(_:at:)` and `Capture.read(into:at:)`).
extension CaptureWriter {
    /// Rewrites `bytes` at `offset` (inside `[0, length)`, checked by the capture). Bytes still
    /// in a buffer are patched in memory, after a commit's flush of that buffer in flight has
    /// landed (so the flush carries the old bytes whole, never a mix); bytes on disk by reading
    /// and rewriting the aligned blocks around them, after the writes in flight land; all by
    /// `deadline`.
    package func patch(_ bytes: UnsafeRawBufferPointer, at offset: Int64, until deadline: UInt64) throws {
        let end = offset + Int64(bytes.count)
        statistics.patches += 1
        patchedSinceCommit = true
        try waitUntil("the flush of the patched buffer", until: deadline) { !ring.flushCovers(offset..<end) }
        let buffered = ring.filling.map { ring.slots[$0].offset } ?? length
        if end > buffered, let slot = ring.filling {
            let from = max(offset, buffered)
            (ring.base(of: slot) + Int(from - buffered))
                .copyMemory(from: bytes.baseAddress! + Int(from - offset), byteCount: Int(end - from))
        }
        if offset < buffered { try patchOnDisk(bytes, at: offset, end: min(end, buffered), until: deadline) }
    }

    /// Reads `offset..<end` (inside `[0, length)`, checked by the capture) into `buffer`: bytes
    /// still in the buffer being filled from memory, the rest from the file once the writes in
    /// flight have landed, by `deadline`.
    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, end: Int64, until deadline: UInt64) throws {
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

    /// Rewrites `offset..<end` of `bytes` in the file, a window of aligned blocks at a time.
    private func patchOnDisk(_ bytes: UnsafeRawBufferPointer, at offset: Int64, end: Int64, until deadline: UInt64) throws {
        try withBlocksOnDisk(offset..<end, until: deadline) { window, block, part in
            (window.baseAddress! + Int(part.lowerBound - block))
                .copyMemory(from: bytes.baseAddress! + Int(part.lowerBound - offset), byteCount: part.count)
            try data.writeAll(UnsafeRawBufferPointer(window), at: block, alignment: alignment, calls)
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
                let n = try data.read(into: UnsafeMutableRawBufferPointer(rebasing: window[read...]), at: block + Int64(read), calls)
                guard n > 0 else { throw ProVideoError(.ioError, "reading back \(data.path) ended early", path: data.path) }
                read += n
            }
            try body(window, block, max(range.lowerBound, block)..<min(range.upperBound, block + Int64(span)))
            block += Int64(span)
        }
    }
}

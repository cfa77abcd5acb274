import Glibc
import ProVideoStorage

/// Frames copied into one aligned buffer that is written with `O_DIRECT` whenever it fills,
/// appending to a new file that is not preallocated (each write allocates blocks and grows
/// the file). The final partial buffer is written padded, then the file is cut to its length.
package final class DirectWriter: FrameWriter {
    private let file: WrittenFile
    private let buffer: AlignedMemory
    private let alignment: Int
    private var filled = 0
    private var length: Int64 = 0
    private var completions = LatencyHistogram()

    /// - Parameters:
    ///   - writeSize: bytes per write, a multiple of `alignment`.
    ///   - alignment: the directory's direct I/O alignment, in bytes.
    package init(path: String, writeSize: Int, alignment: Int) throws {
        file = try WrittenFile(path: path, direct: true)
        buffer = try AlignedMemory(length: writeSize, alignment: alignment)
        self.alignment = alignment
    }

    package var engine: String { "O_DIRECT pwrite(2)" }

    package func append(_ frame: UnsafeRawBufferPointer) throws -> Bool {
        var copied = 0
        while copied < frame.count {
            let n = min(buffer.bytes.count - filled, frame.count - copied)
            (buffer.bytes.baseAddress! + filled).copyMemory(from: frame.baseAddress! + copied, byteCount: n)
            filled += n
            copied += n
            if filled == buffer.bytes.count { try writeBuffer(filled) }
        }
        length += Int64(frame.count)
        return true
    }

    private func writeBuffer(_ count: Int) throws {
        let started = MonotonicClock.nanoseconds()
        try file.write(UnsafeRawBufferPointer(rebasing: buffer.bytes[0..<count]))
        completions.record(MonotonicClock.nanoseconds() - started)
        filled = 0
    }

    package func close() throws {
        if filled > 0 {
            let padded = (filled + alignment - 1) / alignment * alignment
            (buffer.bytes.baseAddress! + filled).initializeMemory(as: UInt8.self, repeating: 0, count: padded - filled)
            try writeBuffer(padded)
            try file.truncate(length)
        }
        try file.flushAndRemove()
    }

    package var completionLatency: LatencySummary { completions.summary }
}

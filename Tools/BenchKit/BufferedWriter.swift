import Glibc
import ProVideoStorage

/// Each frame `write(2)`n to a new file: through the page cache (buffered mode), or into a
/// file of a capture mount (`provideo mount`, mount mode: each file a capture, its writes
/// handed to the capture's buffers). Flushed with `fsync` at the end, then removed before
/// its close, which in a mount cancels the capture so the pool's capacity comes back, as pool
/// mode's cancel gives it back. Its completion latency is the time of each `write` call.
package final class BufferedWriter: FrameWriter {
    private let file: WrittenFile
    private var completions = LatencyHistogram()
    package let engine: String

    package init(path: String, engine: String = "write(2)") throws {
        file = try WrittenFile(path: path, direct: false)
        self.engine = engine
    }

    package func append(_ frame: UnsafeRawBufferPointer) throws -> Bool {
        let started = MonotonicClock.nanoseconds()
        try file.write(frame)
        completions.record(MonotonicClock.nanoseconds() - started)
        return true
    }

    package func close() throws { try file.flushAndRemove() }

    package var completionLatency: LatencySummary { completions.summary }
}

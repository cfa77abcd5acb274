import Glibc
import ProVideoStorage

/// Each frame `write(2)`n through the page cache to a new file; flushed with `fsync` at the
/// end. Its completion latency is the time of each `write` call.
package final class BufferedWriter: FrameWriter {
    private let file: WrittenFile
    private var completions = LatencyHistogram()

    package init(path: String) throws {
        file = try WrittenFile(path: path, direct: false)
    }

    package var engine: String { "write(2)" }

    package func append(_ frame: UnsafeRawBufferPointer) throws -> Bool {
        let started = MonotonicClock.nanoseconds()
        try file.write(frame)
        completions.record(MonotonicClock.nanoseconds() - started)
        return true
    }

    package func close() throws { try file.flushAndRemove() }

    package var completionLatency: LatencySummary { completions.summary }
}

import Glibc
import ProVideoStorage

/// Each frame `write(2)`n through the page cache to a new file; flushed with `fsync` at the
/// end. Its completion latency is the time of each `write` call.
public final class BufferedWriter: FrameWriter {
    private let file: WrittenFile
    private var completions = LatencyHistogram()

    public init(path: String) throws {
        file = try WrittenFile(path: path, direct: false)
    }

    public var engine: String { "write(2)" }

    public func append(_ frame: UnsafeRawBufferPointer) throws -> Bool {
        let started = MonotonicClock.nanoseconds()
        try file.write(frame)
        completions.record(MonotonicClock.nanoseconds() - started)
        return true
    }

    public func close() throws { try file.flushAndRemove() }

    public var completionLatency: LatencySummary { completions.summary }
}

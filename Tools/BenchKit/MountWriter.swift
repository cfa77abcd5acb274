import Glibc
import ProVideoStorage

/// Each frame `write(2)`n into a new file of a capture mount (`provideo mount`): what an
/// unmodified recorder does with its recording path in the mount. The file is a capture; its
/// completion latency is the time of each `write` call. At the end it is made durable
/// (`fsync`, a commit), then removed before its close, which cancels the capture: the pool's
/// capacity comes back, as pool mode's cancel gives it back.
package final class MountWriter: FrameWriter {
    private let path: String
    private let fd: Int32
    private var completions = LatencyHistogram()
    private var closed = false

    package init(path: String) throws {
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw BenchError("cannot create \(path) in the mount: \(String(cString: strerror(errno)))") }
        self.path = path
    }

    deinit { if !closed { Glibc.close(fd) } }

    package var engine: String { "write(2) into provideo mount" }

    package func append(_ frame: UnsafeRawBufferPointer) throws -> Bool {
        let started = MonotonicClock.nanoseconds()
        var done = 0
        while done < frame.count {
            let n = Glibc.write(fd, frame.baseAddress! + done, frame.count - done)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw BenchError("write to \(path) failed: \(String(cString: strerror(n < 0 ? errno : EIO)))") }
            done += n
        }
        completions.record(MonotonicClock.nanoseconds() - started)
        return true
    }

    package func close() throws {
        guard !closed else { return }
        closed = true
        defer { Glibc.close(fd) }
        guard fsync(fd) == 0 else { throw BenchError("fsync of \(path): \(String(cString: strerror(errno)))") }
        guard unlink(path) == 0 else { throw BenchError("removing \(path) from the mount: \(String(cString: strerror(errno)))") }
    }

    package var completionLatency: LatencySummary { completions.summary }
}

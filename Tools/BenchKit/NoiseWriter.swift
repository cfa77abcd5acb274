import Foundation
import Glibc

/// The noisy neighbour: another process writing a large file through the page cache on the
/// same filesystem as fast as it can, with an `fsync` every second, as a file copy or a
/// render next to the recorder would. Its writeback competes with the recorder for the disk.
package enum NoiseWriter {
    /// Bytes per `write(2)`.
    static let chunk = 1 << 20

    /// The child's body: writes `file` until killed, truncating it back to 0 (freeing its
    /// blocks, so they are allocated again) at `limit` bytes. Exits when its parent dies.
    package static func run(file: String, limit: Int64) -> Never {
        let fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { fatalError("noise writer: cannot create \(file): \(String(cString: strerror(errno)))") }
        let parent = getppid()
        let buffer = [UInt8](repeating: 0x5A, count: chunk)
        var written: Int64 = 0
        var lastSync = MonotonicClock.nanoseconds()
        while getppid() == parent {
            let n = buffer.withUnsafeBytes { write(fd, $0.baseAddress!, chunk) }
            if n < 0 && errno != EINTR { fatalError("noise writer: write failed: \(String(cString: strerror(errno)))") }
            written += Int64(max(n, 0))
            if MonotonicClock.nanoseconds() - lastSync >= 1_000_000_000 {
                fsync(fd)
                lastSync = MonotonicClock.nanoseconds()
            }
            if written >= limit {
                ftruncate(fd, 0)
                lseek(fd, 0, SEEK_SET)
                written = 0
            }
        }
        exit(0)
    }
}

/// A running `NoiseWriter` child process (this executable, `noise-writer FILE LIMIT`).
package final class NoisyNeighbour {
    private let process: Process
    package let file: String

    /// Starts the child writing `directory`/noise-<pid> up to `limit` bytes.
    package init(directory: String, limit: Int64) throws {
        file = "\(directory)/noise-\(getpid())"
        process = Process()
        process.executableURL = URL(fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        process.arguments = ["noise-writer", file, String(limit)]
        try process.run()
    }

    /// Stops the child (SIGTERM to its pid) and removes its file.
    package func stop() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        unlink(file)
    }
}

import Foundation
import Glibc

/// The noisy neighbour: another process writing a large file through the page cache on the
/// same filesystem as fast as it can, with an `fsync` every second, as a file copy or a
/// render next to the recorder would. Its writeback competes with the recorder for the disk.
package enum NoiseWriter {
    /// Bytes per `write(2)`.
    static let chunk = 1 << 20

    /// What a run of `write` did.
    struct Outcome: Equatable {
        /// Bytes written, across every restart.
        var written: Int64 = 0
        /// Times the filesystem was full (ENOSPC, EDQUOT) and the file was truncated to start
        /// again: the neighbour keeps writing beside the recorders, as a copy retried would.
        var restartsOnFullFilesystem = 0
    }

    /// The child's body: `write` until its parent dies, then exit 0; exit 1 with the reason
    /// when the file cannot be created or written for another reason than a full filesystem.
    package static func run(file: String, limit: Int64) -> Never {
        let parent = getppid()
        do {
            let outcome = try write(file: file, limit: limit) { getppid() == parent }
            if outcome.restartsOnFullFilesystem > 0 {
                FileHandle.standardError.write(Data(("noise writer: the filesystem was full \(outcome.restartsOnFullFilesystem) "
                                                     + "time(s); each time the noise file started again from 0\n").utf8))
            }
            exit(0)
        } catch {
            FileHandle.standardError.write(Data("noise writer: \(error)\n".utf8))
            exit(1)
        }
    }

    /// Writes `file` while `running()` holds, truncating it back to 0 (freeing its blocks, so
    /// they are allocated again) at `limit` bytes or when the filesystem is full, with an
    /// `fsync` every second.
    /// - Throws: `BenchError` naming the call and its errno for any other failure.
    static func write(file: String, limit: Int64, running: () -> Bool) throws -> Outcome {
        let fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw BenchError("cannot create \(file): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let buffer = [UInt8](repeating: 0x5A, count: chunk)
        var outcome = Outcome()
        var length: Int64 = 0
        var lastSync = MonotonicClock.nanoseconds()
        func restart() throws {
            guard ftruncate(fd, 0) == 0, lseek(fd, 0, SEEK_SET) == 0 else {
                throw BenchError("cannot truncate \(file): \(String(cString: strerror(errno)))")
            }
            length = 0
        }
        while running() {
            let n = buffer.withUnsafeBytes { Glibc.write(fd, $0.baseAddress!, chunk) }
            if n < 0 {
                switch errno {
                case EINTR: continue
                case ENOSPC, EDQUOT:
                    outcome.restartsOnFullFilesystem += 1
                    try restart()
                    continue
                default: throw BenchError("write to \(file) failed: \(String(cString: strerror(errno)))")
                }
            }
            length += Int64(n)
            outcome.written += Int64(n)
            if MonotonicClock.nanoseconds() - lastSync >= 1_000_000_000 {
                // A full filesystem can surface at writeback: the same restart.
                if fsync(fd) != 0 {
                    guard errno == ENOSPC || errno == EDQUOT else {
                        throw BenchError("fsync of \(file) failed: \(String(cString: strerror(errno)))")
                    }
                    outcome.restartsOnFullFilesystem += 1
                    try restart()
                }
                lastSync = MonotonicClock.nanoseconds()
            }
            if length >= limit { try restart() }
        }
        return outcome
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

    /// Why the run was not noisy to its end: the child exited by itself (its standard error says
    /// why); nil while it runs.
    package var exitedEarly: String? {
        process.isRunning ? nil : "the noisy neighbour exited (status \(process.terminationStatus)) before the run ended: "
            + "what ran after that ran without it"
    }

    /// Stops the child (SIGTERM to its pid) and removes its file.
    package func stop() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        unlink(file)
    }
}

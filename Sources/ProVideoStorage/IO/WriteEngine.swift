import CProVideo
import Glibc

/// One finished request: its tag and the kernel's result (bytes written, 0 for a finished
/// fdatasync, or -errno), as in an io_uring CQE.
package struct EngineCompletion {
    package var tag: UInt64
    package var result: Int32

    package init(tag: UInt64, result: Int32) {
        self.tag = tag
        self.result = result
    }
}

/// Runs a writer's writes and flushes asynchronously. Requests are queued, `submit()`
/// hands them to the kernel, completions come back in any order. Two implementations:
/// `URingEngine` (io_uring through liburing) and `PwriteEngine` (pwrite(2) on a writer thread,
/// used where io_uring cannot be set up).
package protocol WriteEngine: AnyObject {
    /// "io_uring", "io_uring (unregistered buffers)" or "pwrite".
    var name: String { get }
    /// Queues a write of `length` bytes at `address` to `offset` of `fd`. `slot` is the index of
    /// the registered buffer `address` lies in, or -1 for memory outside the registered buffers.
    func queueWrite(fd: Int32, slot: Int, address: UnsafeRawPointer, length: Int, offset: Int64, tag: UInt64) throws
    /// Queues fdatasync(2) of `fd`.
    func queueDataSync(fd: Int32, tag: UInt64) throws
    /// Hands queued requests to the kernel.
    func submit() throws
    /// The next completion: waits up to `waitNanoseconds` (0: only if ready).
    func nextCompletion(waitNanoseconds: Int64) throws -> EngineCompletion?
    /// Cancels every request that has not started: each completes with `-ECANCELED` (a write
    /// already issued to the device completes as usual). Submits at once. The cancellation's
    /// own completion, if any, carries `tag`.
    func cancelAll(tag: UInt64) throws
    /// Stops whatever the engine runs besides the kernel (the pwrite engine's writer thread),
    /// waiting at most `waitNanoseconds`. Call once no request is outstanding.
    /// - Returns: false when it did not stop in time.
    func shutdown(waitNanoseconds: Int64) -> Bool
}

/// Which engine a writer uses.
public enum EngineChoice: String, Sendable, Codable {
    /// io_uring when it can be set up, else pwrite.
    case automatic
    case ioUring
    case pwrite
}

enum WriteEngineFactory {
    /// Builds the engine for `buffers`: io_uring with registered buffers where the memlock
    /// limit allows, unregistered where it does not, and the pwrite engine when io_uring
    /// cannot be set up at all (kernel.io_uring_disabled, seccomp, memlock).
    static func make(_ choice: EngineChoice, buffers: [UnsafeMutableRawBufferPointer], queueDepth: Int,
                     calls: SystemCalls) throws -> WriteEngine {
        if choice != .pwrite {
            do {
                return calls.engine(try URingEngine(entries: queueDepth, buffers: buffers, calls: calls))
            } catch where choice == .automatic {
                // Disabled by sysctl, blocked by seccomp, or no memory: the pwrite engine runs.
            }
        }
        return calls.engine(PwriteEngine(queueDepth: queueDepth, calls: calls))
    }

    /// The engine a writer started now would use, for `provideo status`.
    static func availableEngineName() -> String {
        do {
            _ = try IOURing(entries: 4)
            return "io_uring"
        } catch {
            return "pwrite (io_uring unavailable: \((error as? ProVideoError)?.errno.map(Errno.description) ?? "\(error)"))"
        }
    }
}

import Glibc
import ProVideoSystem

/// Which engine a writer uses.
public enum EngineChoice: String, Sendable, Codable {
    /// io_uring when it can be set up, else pwrite.
    case automatic
    case ioUring
    case pwrite
}

package enum WriteEngineFactory {
    /// Builds the engine for `buffers`: io_uring with registered buffers where the memlock
    /// limit allows, unregistered where it does not, and the pwrite engine when io_uring
    /// cannot be set up at all (kernel.io_uring_disabled, seccomp, memlock).
    package static func make(_ choice: EngineChoice, buffers: [UnsafeMutableRawBufferPointer], queueDepth: Int,
                     calls: SystemCalls) throws -> WriteEngine {
        if choice != .pwrite {
            do {
                return calls.engine(try URingEngine(entries: queueDepth, buffers: buffers, calls: calls))
            } catch where choice == .automatic {
                // Disabled by sysctl, blocked by seccomp, or no memory: the pwrite engine runs.
            }
        }
        return calls.engine(try PwriteEngine(queueDepth: queueDepth, calls: calls))
    }

    /// The engine a writer started now would use, for `provideo status`.
    package static func availableEngineName() -> String {
        do {
            _ = try IOURing(entries: 4)
            return "io_uring"
        } catch {
            return "pwrite (io_uring unavailable: \((error as? ProVideoError)?.errno.map(Errno.description) ?? "\(error)"))"
        }
    }
}

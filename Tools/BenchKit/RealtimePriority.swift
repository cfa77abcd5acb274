import Foundation
import Glibc

/// Real-time scheduling for a recorder's thread, as capture applications run the thread that
/// takes frames from the card: the thread runs before every `SCHED_OTHER` thread (the noisy
/// neighbour, kernel flushers) whenever it is runnable.
package enum RealtimePriority {
    /// Puts the calling thread under `SCHED_FIFO` at `priority`. The corresponding C function
    /// is `pthread_setschedparam(3)`.
    /// - Throws: `BenchError` when the process may not (it needs root, `CAP_SYS_NICE` or an
    ///   `RLIMIT_RTPRIO` of at least `priority`).
    package static func apply(_ priority: Int32) throws {
        var parameter = sched_param()
        parameter.sched_priority = priority
        let result = pthread_setschedparam(pthread_self(), Int32(SCHED_FIFO), &parameter)
        guard result == 0 else {
            throw BenchError("cannot run a recorder thread under SCHED_FIFO at priority \(priority): "
                             + String(cString: strerror(result)) + " (run as root, or raise RLIMIT_RTPRIO: "
                             + "`ulimit -r \(priority)`)")
        }
    }

    /// Whether a thread of this process may run under `SCHED_FIFO` at `priority`: tried on a
    /// thread of its own, which then ends, so no thread here changes its policy. A thread that
    /// has not answered within 5 s counts as not permitted.
    package static func isPermitted(_ priority: Int32) -> Bool {
        let done = DispatchSemaphore(value: 0)
        // Written before the signal and read only after it: the semaphore orders the two.
        nonisolated(unsafe) var permitted = false
        let thread = Thread {
            permitted = (try? apply(priority)) != nil
            done.signal()
        }
        thread.start()
        guard done.wait(timeout: .now() + 5) == .success else { return false }
        return permitted
    }
}

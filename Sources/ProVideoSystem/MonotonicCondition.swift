import Glibc

/// A mutex and a condition variable whose timed waits run on `CLOCK_MONOTONIC`. Foundation's
/// `NSCondition.wait(until:)` takes a `Date`, so its bound runs on `CLOCK_REALTIME`: an NTP
/// step (common at boot, when services start) stretches or shrinks every bound by the step.
///
/// The corresponding C functions are pthread_mutex_lock(3), pthread_cond_signal(3) and
/// pthread_cond_timedwait(3), with the condition's clock set by pthread_condattr_setclock(3).
package final class MonotonicCondition: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    package init() {
        mutex = .allocate(capacity: 1)
        condition = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    package func lock() { pthread_mutex_lock(mutex) }
    package func unlock() { pthread_mutex_unlock(mutex) }
    package func signal() { pthread_cond_signal(condition) }
    package func broadcast() { pthread_cond_broadcast(condition) }

    /// Waits, with the mutex locked, until signalled or until `deadline` (`MonotonicTime.now()`
    /// nanoseconds) has passed; spurious wake-ups return too, so callers loop on their predicate.
    /// - Returns: false once the deadline has passed.
    @discardableResult
    package func wait(until deadline: UInt64) -> Bool {
        guard MonotonicTime.now() < deadline else { return false }
        var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        return pthread_cond_timedwait(condition, mutex, &ts) != ETIMEDOUT
    }

    /// Waits, with the mutex locked, until signalled (or a spurious wake-up).
    package func wait() { pthread_cond_wait(condition, mutex) }
}

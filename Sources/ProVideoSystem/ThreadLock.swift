import CProVideo
import Glibc

/// A pthread mutex between a process's threads, plain or recursive (`PTHREAD_MUTEX_RECURSIVE`,
/// pthread_mutexattr_settype(3): the holder may take it again and releases it as often). For
/// what `Synchronization.Mutex` cannot do: a hold that spans scopes, or a recursive lock
/// waited for until a deadline on the monotonic clock.
package final class ThreadLock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    package init(recursive: Bool = false) {
        mutex = .allocate(capacity: 1)
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        if recursive { pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_RECURSIVE)) }
        pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    package func lock() { pthread_mutex_lock(mutex) }

    /// Takes the lock if no other thread holds it (or, recursive, if this one does).
    package func tryLock() -> Bool { pthread_mutex_trylock(mutex) == 0 }

    /// Takes the lock, waiting until `deadline` (`MonotonicTime` nanoseconds) at most; false
    /// when another thread kept it that long. The waiter sleeps in the kernel and is woken at
    /// the unlock (pthread_mutex_clocklock(3)): a polling waiter can miss every release to
    /// threads that take the lock between its polls.
    package func lock(until deadline: UInt64) -> Bool { pv_mutex_lock_until(mutex, deadline) == 0 }

    package func unlock() { pthread_mutex_unlock(mutex) }

    package func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }
}

import CProVideo
import Glibc
import Synchronization

/// Wakes one waiting thread without a lock the waker must take: an eventfd(2) counter, written
/// by `wake()` and polled by `wait(until:)`. A real-time thread that wakes a thread of normal
/// priority through a mutex waits whenever that thread was preempted holding the mutex
/// (priority inversion); write(2) on an eventfd takes only the kernel's own spinlock. A wake
/// before the wait is kept (the counter stays readable), so none is lost between a waiter's
/// last look at its state and its wait.
package final class ThreadWake: @unchecked Sendable {
    private let descriptor: Int32
    /// Set by the first `wake()` since the waiter last woke: later ones make no system call.
    private let pending = Atomic<Bool>(false)

    /// - Throws: `.ioError` with eventfd(2)'s error (EMFILE, ENFILE, ENOMEM).
    package init() throws {
        let result = pv_eventfd()
        guard result >= 0 else { throw ProVideoError.system("eventfd", errno: -result) }
        descriptor = result
    }

    deinit { close(descriptor) }

    /// Wakes the waiter, or its next wait if it is not waiting; never blocks.
    package func wake() {
        guard !pending.exchange(true, ordering: .sequentiallyConsistent) else { return }
        var one: UInt64 = 1
        // EAGAIN only when the count is at its maximum: the waiter has a wake to read anyway.
        _ = write(descriptor, &one, MemoryLayout<UInt64>.size)
    }

    /// Waits until woken (by a wake since the last wait, or one during this one) or `deadline`
    /// (`MonotonicTime` nanoseconds). Wakes to come after this returns are not lost: the waiter
    /// looks at its state after this, and any change made after that look wakes it again.
    package func wait(until deadline: UInt64) {
        let now = MonotonicTime.now()
        if now < deadline {
            // poll(2) takes milliseconds: round up, so a wait never ends before its deadline.
            let milliseconds = min((deadline - now + 999_999) / 1_000_000, UInt64(Int32.max))
            var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            _ = poll(&entry, 1, Int32(milliseconds))
        }
        pending.store(false, ordering: .sequentiallyConsistent)
        var count: UInt64 = 0
        _ = read(descriptor, &count, MemoryLayout<UInt64>.size)
    }
}

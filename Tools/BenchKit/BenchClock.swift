import Glibc

/// The time source of the simulated recorders, in nanoseconds on a monotonic clock. Tests
/// swap in a fake one so frame accounting is checked without waiting or asserting timings.
package protocol BenchClock: AnyObject {
    /// Now, in nanoseconds.
    func now() -> UInt64
    /// Returns at `deadline` (nanoseconds on this clock), or at once when it has passed.
    func sleep(until deadline: UInt64)
}

/// `CLOCK_MONOTONIC`, sleeping with `clock_nanosleep(TIMER_ABSTIME)` so frame deadlines do
/// not drift with the time spent writing.
package final class MonotonicClock: BenchClock {
    package init() {}

    package func now() -> UInt64 { Self.nanoseconds() }

    /// `CLOCK_MONOTONIC` in nanoseconds, without an instance (for the writers' own timings).
    package static func nanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    package func sleep(until deadline: UInt64) {
        var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
    }
}

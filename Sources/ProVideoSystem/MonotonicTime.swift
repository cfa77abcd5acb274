import Glibc

/// CLOCK_MONOTONIC, and short sleeps for the few waits that poll.
package enum MonotonicTime {
    /// clock_gettime(2) with `CLOCK_MONOTONIC`, in nanoseconds.
    package static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// usleep(3).
    package static func sleep(microseconds: UInt32) { usleep(microseconds) }
}

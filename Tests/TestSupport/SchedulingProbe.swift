import Foundation
import Glibc

/// How late this machine wakes a thread of this process, measured beside a test: a thread
/// sleeps to deadlines `step` apart and records how far past each it woke. A test that bounds a
/// time by a promised cadence allows the cadence plus what the machine itself took in the same
/// run (Docs/TESTING.md, "Time in tests"), and says both numbers when it fails: on a busy
/// machine a status came 1.28 s apart against a fixed 1.0 s bound.
package final class SchedulingProbe: @unchecked Sendable {
    private let lock = NSLock()
    private var worst: UInt64 = 0
    private var wakeUps = 0
    private var stopping = false
    private var done = false
    private let step: UInt64

    /// Starts the sleeping thread at once.
    package init(stepNanoseconds: UInt64 = 10_000_000) {
        step = stepNanoseconds
        let thread = Thread { [self] in run() }
        thread.name = "scheduling-probe"
        thread.start()
    }

    /// The worst lateness of a wake-up so far, in seconds.
    package var worstLateness: Double {
        lock.lock()
        defer { lock.unlock() }
        return Double(worst) / 1e9
    }

    /// Stops the thread and returns the worst lateness it saw, in seconds.
    @discardableResult
    package func stop() -> Double {
        lock.lock()
        stopping = true
        lock.unlock()
        while true {
            lock.lock()
            let finished = done
            lock.unlock()
            if finished { break }
            usleep(1_000)
        }
        return worstLateness
    }

    /// What the probe saw, for a failure message.
    package var summary: String {
        lock.lock()
        defer { lock.unlock() }
        return String(format: "a thread sleeping beside it in %d ms steps woke up to %.3f s late (%d wake-ups)",
                      Int(step / 1_000_000), Double(worst) / 1e9, wakeUps)
    }

    private static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    private func run() {
        while true {
            lock.lock()
            let stop = stopping
            lock.unlock()
            if stop { break }
            let deadline = Self.now() + step
            TestSupport.sleep(untilMonotonic: deadline)
            let late = Self.now() - deadline
            lock.lock()
            worst = max(worst, late)
            wakeUps += 1
            lock.unlock()
        }
        lock.lock()
        done = true
        lock.unlock()
    }
}

extension TestSupport {
    /// Sleeps until `deadline` on the monotonic clock (nanoseconds), however many signals
    /// interrupt the sleep: `usleep` returns early, with EINTR, when a signal with a handler is
    /// delivered to the sleeping thread, and a test process receives them (a child's SIGCHLD).
    package static func sleep(untilMonotonic deadline: UInt64) {
        var target = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &target, nil) == EINTR {}
    }

    /// Sleeps `nanoseconds` in full (see `sleep(untilMonotonic:)`).
    package static func sleep(nanoseconds: UInt64) {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        sleep(untilMonotonic: UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec) + nanoseconds)
    }
}

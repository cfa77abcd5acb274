import Glibc

/// The calling thread's time spent runnable but waiting for a CPU: the second field of
/// `/proc/thread-self/schedstat` (nanoseconds; proc(5), and the kernel's
/// Documentation/scheduler/sched-stats.rst), added when the thread gets a CPU, so exact
/// between two reads by the thread itself. (Its first field, time on a CPU, moves only at
/// ticks and switches for a running thread: `ThreadCPUTime` is exact.) The kernel counts it
/// only while task delay accounting (`kernel.task_delayacct`) or schedstats are on;
/// `SchedulerDelayAccounting` turns it on for a run.
final class RunQueueDelay {
    private let fd: Int32
    /// Room for the three decimal fields; read without allocating, on the recorder's thread.
    private let text = UnsafeMutableRawBufferPointer.allocate(byteCount: 96, alignment: 8)

    /// Opens the calling thread's file; nil when the kernel has none or does not count
    /// (task delay accounting off: the file then reads 0 for every thread).
    init?() {
        let fd = SchedulerDelayAccounting.isOn ? open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC) : -1
        guard fd >= 0 else {
            text.deallocate()
            return nil
        }
        self.fd = fd
    }

    deinit {
        close(fd)
        text.deallocate()
    }

    /// Nanoseconds this thread has waited on a run queue since it started (the file's second
    /// field); 0 when unreadable.
    func nanoseconds() -> UInt64 {
        let count = pread(fd, text.baseAddress, text.count, 0)
        guard count > 0 else { return 0 }
        var field = 0
        var value: UInt64 = 0
        for byte in text.prefix(count) {
            if byte == UInt8(ascii: " ") {
                if field == 1 { return value }
                field += 1
                value = 0
            } else if field == 1 && byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                value = value &* 10 &+ UInt64(byte - UInt8(ascii: "0"))
            }
        }
        return 0
    }
}

/// Turns the kernel's task delay accounting on for a run (root only) and back off after it, so
/// that `RunQueueDelay` counts. Threads started while it is on are counted.
struct SchedulerDelayAccounting {
    static let sysctl = "/proc/sys/kernel/task_delayacct"
    /// What the sysctl held before, when this changed it.
    private let previous: String?

    /// Turns accounting on when it is off and this process may change it.
    init() {
        guard let value = Self.read(), value == "0", Self.write("1") else {
            previous = nil
            return
        }
        previous = value
    }

    /// Whether the kernel counts run-queue delay now.
    static var isOn: Bool { read() == "1" }

    /// Restores the sysctl.
    func restore() {
        if let previous { _ = Self.write(previous) }
    }

    private static func read() -> String? {
        let fd = open(sysctl, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var byte: UInt8 = 0
        return Glibc.read(fd, &byte, 1) == 1 ? String(UnicodeScalar(byte)) : nil
    }

    private static func write(_ value: String) -> Bool {
        let fd = open(sysctl, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return value.utf8CString.withUnsafeBufferPointer { Glibc.write(fd, $0.baseAddress, 1) } == 1
    }
}

/// The calling thread's time on a CPU, in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`, brought up to
/// date by the kernel on each read; it leaves out time the hypervisor stole).
enum ThreadCPUTime {
    static func nanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}

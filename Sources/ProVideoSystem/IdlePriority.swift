import CProVideo

/// Background work (a copy that can wait) that must not cost foreground writers their deadlines: the calling thread gives
/// way to every other thread for the disk and for the CPUs.
package enum IdlePriority {
    /// Puts the calling thread in the idle I/O class (ioprio_set(2) `IOPRIO_CLASS_IDLE`: BFQ
    /// serves its requests only when no other I/O waits; mq-deadline holds them back while
    /// other requests are queued, up to `prio_aging_expire`; `none`, Kyber and network
    /// filesystems ignore it: `IOScheduler`, Docs/LANDING.md) and the idle CPU policy (sched_setscheduler(2) `SCHED_IDLE`: its
    /// hashing and copying run only on a CPU with nothing else to do).
    /// - Throws: `.permissionDenied` (EPERM) or `.ioError` when the kernel refuses either.
    package static func enter() throws {
        let io = pv_ioprio_set_idle()
        if io < 0 { throw ProVideoError.system("ioprio_set", errno: -io) }
        let cpu = pv_sched_idle()
        if cpu < 0 { throw ProVideoError.system("sched_setscheduler", errno: -cpu) }
    }
}

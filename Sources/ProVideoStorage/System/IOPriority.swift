import CProVideo

/// The I/O scheduling class of the calling thread (ioprio_set(2)).
enum IOPriority {
    /// Puts the calling thread in the idle class: the block layer serves its reads and writes
    /// only when no other I/O is waiting (BFQ; mq-deadline dispatches it after every
    /// best-effort request). `none` and network filesystems ignore it: see Docs/LANDING.md.
    /// - Throws: `.permissionDenied` (EPERM) or `.ioError` when the kernel refuses it.
    static func becomeIdle() throws {
        let rc = pv_ioprio_set_idle()
        if rc < 0 { throw ProVideoError.system("ioprio_set", errno: -rc) }
    }
}

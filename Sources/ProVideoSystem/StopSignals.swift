import CProVideo

/// SIGINT, SIGTERM and SIGHUP (a dropped SSH session) as a flag, for the package's tools: a
/// tool that is told to stop finishes its work and cleans up instead of dying with gigabytes of
/// scratch left behind. The tools reach signals through here, not the
/// C shim.
///
/// The corresponding C functions are sigaction(2) (handlers that only set a flag) and
/// pthread_sigmask(3) (the signals unblocked on the calling thread).
package enum StopSignals {
    /// Installs the handlers; call once, before other threads start.
    /// - Parameter restart: `SA_RESTART`, for callers whose reads must not see EINTR
    ///   (Foundation's pipe reads); without it a blocking read returns EINTR (`provideo record`).
    package static func install(restart: Bool) { _ = pv_install_stop_signals(restart ? 1 : 0) }

    /// True once SIGINT or SIGTERM arrived.
    package static var requested: Bool { pv_stop_requested() != 0 }
}

/// Open flags the C shim defines for Swift: `O_DIRECT` needs `_GNU_SOURCE`, which Glibc's
/// Swift overlay is not built with.
package enum OpenFlags {
    /// `O_DIRECT` (open(2)).
    package static let direct: Int32 = pv_O_DIRECT
}

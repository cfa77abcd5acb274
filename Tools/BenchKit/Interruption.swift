import CProVideo

/// SIGINT, SIGTERM and SIGHUP stop a benchmark cleanly: the recorders stop at their next frame,
/// fio is terminated, captures are cancelled and scratch pools destroyed as the error unwinds.
/// Without this the default action killed the process and left gigabytes of scratch pool in
/// /var/tmp, and an orphaned fio writing into a pool that looked free.
public enum Interruption {
    /// Installs the handlers (`sigaction`, `SA_RESTART`: Foundation's pipe reads treat `EINTR`
    /// as fatal); call once, before any thread starts.
    public static func install() { _ = pv_install_stop_signals(1) }

    public static var requested: Bool { pv_stop_requested() != 0 }

    /// - Throws: `BenchError` once a stop signal arrived.
    public static func check() throws {
        if requested { throw BenchError("interrupted: stopped, captures cancelled, scratch pools removed") }
    }
}

import ProVideoStorage
/// SIGINT, SIGTERM and SIGHUP stop a benchmark cleanly: the recorders stop at their next frame,
/// fio is terminated, captures are cancelled and scratch pools destroyed as the error unwinds.
/// Without this the default action killed the process and left gigabytes of scratch pool in
/// /var/tmp, and an orphaned fio writing into a pool that looked free.
package enum Interruption {
    /// Installs the handlers (`sigaction`, `SA_RESTART`: Foundation's pipe reads treat `EINTR`
    /// as fatal); call once, before any thread starts.
    package static func install() { StopSignals.install(restart: true) }

    package static var requested: Bool { StopSignals.requested }

    /// - Throws: `BenchError` once a stop signal arrived.
    package static func check() throws {
        if requested { throw BenchError("interrupted: stopped, captures cancelled, scratch pools removed") }
    }
}

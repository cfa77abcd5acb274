import Glibc

/// A thread nobody joins (pthread_detach(3)). For long-lived helper threads, in place of
/// Foundation's `Thread`, so that a process linking the layers above need not load Foundation.
package enum DetachedThread {
    /// Starts `body` on a new detached thread named `name` (`PosixThread`).
    /// - Throws: `.ioError` with pthread_create(3)'s error (EAGAIN: out of threads or memory).
    package static func start(name: String, _ body: @escaping @Sendable () -> Void) throws {
        pthread_detach(try PosixThread.start(name: name, body))
    }
}

import Glibc

/// A thread its starter waits for with pthread_join(3), which returns only once the thread has
/// ended, its thread-local destructors included (pthread_key_create(3)). Foundation's `Thread`
/// is detached: a caller told "done" by the body may return and the process exit while that
/// thread still runs its destructors, and libcrypto's exit handler then frees the state one of
/// them is freeing (a SIGSEGV in libcrypto, `provideo land` on CI; openssl/openssl#6214, where
/// OpenSSL's maintainers ask for the join).
package final class JoinedThread {
    private let thread: pthread_t

    /// Starts `body` on a new thread named `name` (`PosixThread`).
    /// - Throws: `.ioError` with pthread_create(3)'s error (EAGAIN: out of threads or memory).
    package init(name: String, _ body: @escaping @Sendable () -> Void) throws {
        thread = try PosixThread.start(name: name, body)
    }

    /// Waits until the thread has ended; called once.
    package func join() {
        let result = pthread_join(thread, nil)
        precondition(result == 0, "pthread_join: \(result)")
    }
}

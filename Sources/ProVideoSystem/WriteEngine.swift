// The interface of a write engine lives here, below the engines (ProVideoIO), so that the system
// calls' seam (`SystemCalls.engine`) can wrap one: a test delays, reorders or fails its
// requests the way it fails any other system call.

/// One finished request: its tag and the kernel's result (bytes written, 0 for a finished
/// fdatasync, or -errno), as in an io_uring CQE.
package struct EngineCompletion {
    package var tag: UInt64
    package var result: Int32

    package init(tag: UInt64, result: Int32) {
        self.tag = tag
        self.result = result
    }
}

/// Runs a writer's writes and flushes asynchronously. Requests are queued, `submit()`
/// hands them to the kernel, completions come back in any order. Two implementations:
/// `URingEngine` (io_uring through liburing) and `PwriteEngine` (pwrite(2) on a writer thread,
/// used where io_uring cannot be set up).
package protocol WriteEngine: AnyObject {
    /// "io_uring", "io_uring (unregistered buffers)" or "pwrite".
    var name: String { get }
    /// Queues a write of `length` bytes at `address` to `offset` of `fd`. `slot` is the index of
    /// the registered buffer `address` lies in, or -1 for memory outside the registered buffers.
    func queueWrite(fd: Int32, slot: Int, address: UnsafeRawPointer, length: Int, offset: Int64, tag: UInt64) throws
    /// Queues fdatasync(2) of `fd`.
    func queueDataSync(fd: Int32, tag: UInt64) throws
    /// Hands queued requests to the kernel.
    func submit() throws
    /// The next completion: waits up to `waitNanoseconds` (0: only if ready).
    func nextCompletion(waitNanoseconds: Int64) throws -> EngineCompletion?
    /// Cancels every request that has not started: each completes with `-ECANCELED` (a write
    /// already issued to the device completes as usual). Submits at once. The cancellation's
    /// own completion, if any, carries `tag`.
    func cancelAll(tag: UInt64) throws
    /// Stops whatever the engine runs besides the kernel (the pwrite engine's writer thread),
    /// waiting at most `waitNanoseconds`. Call once no request is outstanding.
    /// - Returns: false when it did not stop in time.
    func shutdown(waitNanoseconds: Int64) -> Bool
}

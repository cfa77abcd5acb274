/// Runs a blocking operation on a dedicated thread and suspends the calling task until it
/// ends, so that no long fallocate, copy or fsync blocks Swift's cooperative threads (a
/// handful of threads that every task shares) or an actor.
package enum OffThread {
    /// Runs `body` on a new thread named `name`, handing it the operation's control.
    /// - Parameters:
    ///   - cancellable: whether cancelling the task stops `body` at its next
    ///     `OperationControl.checkpoint`; false: `body` runs to its end whatever happens.
    ///   - progress: the handler the control reports to, on that thread.
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws (`.cancelled` from a checkpoint); `.ioError` when no thread
    ///   can be started (pthread_create(3)).
    package static func run<T: Sendable>(_ name: String, cancellable: Bool, progress: ProVideoProgress?,
                                 _ body: @escaping @Sendable (OperationControl) throws -> T) async throws -> T {
        let cancellation = cancellable ? OperationControl.Cancellation() : nil
        let control = OperationControl(progress: progress, cancellation: cancellation)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                do {
                    try DetachedThread.start(name: name) { continuation.resume(with: Result { try body(control) }) }
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        } onCancel: {
            cancellation?.cancel()
        }
    }
}

import Foundation

/// Runs a blocking pool operation on a dedicated thread and suspends the calling task until it
/// ends, so that no long fallocate, copy or fsync blocks Swift's cooperative thread pool (a
/// handful of threads that every task shares) or an actor.
enum OffThread {
    /// Runs `body` on a new thread named `name`.
    /// - Parameters:
    ///   - cancellable: whether cancelling the task stops `body` at its next
    ///     `OperationContext.checkpoint`; false: `body` runs to its end whatever happens.
    ///   - progress: the handler `OperationContext.report` calls on that thread.
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws (`.cancelled` from a checkpoint).
    static func run<T: Sendable>(_ name: String, cancellable: Bool, progress: ProVideoProgress?,
                                 _ body: @escaping @Sendable () throws -> T) async throws -> T {
        let context = OperationContext(progress: progress)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let thread = Thread {
                    context.install()
                    continuation.resume(with: Result { try body() })
                }
                thread.name = name
                thread.start()
            }
        } onCancel: {
            if cancellable { context.cancel() }
        }
    }
}

import Synchronization

/// Reports the progress of a long operation, in bytes: `bytesDone` of `bytesTotal`. Called on
/// the operation's own thread, never on the caller's task: hop to an actor to show it.
public typealias ProVideoProgress = @Sendable (_ bytesDone: Int64, _ bytesTotal: Int64) -> Void

/// The progress observer and cancellation flag of one long operation (a copy to another
/// filesystem and its verification, a zero-fill), handed down as a parameter to the loops that
/// do the work, so that a call behaves the same on whatever thread runs it (issue 26: no
/// thread-local context, no process-wide observer).
package struct OperationControl: Sendable {
    package enum Step: Sendable, Equatable {
        /// Bytes copied to the destination's filesystem.
        case copying
        /// Bytes read back for the SHA-256 comparison: the source, then the copy.
        case verifying
    }

    /// Called on the operation's thread with the step, bytes done and bytes in the step.
    package typealias Observer = @Sendable (_ step: Step, _ done: Int64, _ total: Int64) -> Void

    /// Set once, from any thread, to stop the operation at its next checkpoint.
    package final class Cancellation: Sendable {
        private let flag = Atomic<Bool>(false)
        package init() {}
        package func cancel() { flag.store(true, ordering: .relaxed) }
        package var isCancelled: Bool { flag.load(ordering: .relaxed) }
    }

    package let observer: Observer?
    package let cancellation: Cancellation?

    package init(observer: Observer? = nil, cancellation: Cancellation? = nil) {
        self.observer = observer
        self.cancellation = cancellation
    }

    /// Progress in bytes of each step, as the public `async` API reports it.
    package init(progress: ProVideoProgress?, cancellation: Cancellation?) {
        var observer: Observer?
        if let progress { observer = { _, done, total in progress(done, total) } }
        self.init(observer: observer, cancellation: cancellation)
    }

    /// No progress and no cancellation: the operation runs to its end.
    package static let none = OperationControl()

    /// Throws if the operation was cancelled: call only where stopping leaves nothing half-done
    /// (the caller's cleanup runs, as for any error).
    /// - Parameter step: what is stopped, for the message.
    /// - Throws: `.cancelled`.
    package func checkpoint(_ step: @autoclosure () -> String) throws {
        guard cancellation?.isCancelled == true else { return }
        throw ProVideoError(.cancelled, "cancelled: \(step()) was stopped; nothing was left half-done")
    }

    /// Passes progress to the observer, if there is one.
    package func report(_ step: Step, _ done: Int64, _ total: Int64) {
        observer?(step, done, total)
    }
}

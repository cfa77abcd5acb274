import Foundation
import Synchronization

/// Reports the progress of a long operation, in bytes: `bytesDone` of `bytesTotal`. Called on
/// the operation's own thread, never on the caller's task: hop to an actor to show it.
public typealias ProVideoProgress = @Sendable (_ bytesDone: Int64, _ bytesTotal: Int64) -> Void

/// The cancellation flag and progress handler of the async operation running on this thread
/// (`OffThread`). The synchronous code underneath (a copy, a zero-fill) reaches them through
/// `current` rather than through new parameters, so the core keeps its signatures.
final class OperationContext: Sendable {
    let progress: ProVideoProgress?
    private let cancelled = Atomic<Bool>(false)
    private static let key = "ProVideoStorage.OperationContext"

    init(progress: ProVideoProgress?) {
        self.progress = progress
    }

    func cancel() { cancelled.store(true, ordering: .relaxed) }

    /// The context of the async operation this thread runs, nil on any other thread.
    static var current: OperationContext? { Thread.current.threadDictionary[key] as? OperationContext }

    /// Makes `self` the context of the calling thread (once, at the start of its work).
    func install() { Thread.current.threadDictionary[Self.key] = self }

    /// Throws if the operation on this thread was cancelled: call only where stopping leaves
    /// nothing half-done (the caller's cleanup runs, as for any error).
    /// - Parameter step: what is stopped, for the message.
    /// - Throws: `.cancelled`.
    static func checkpoint(_ step: @autoclosure () -> String) throws {
        guard let context = current, context.cancelled.load(ordering: .relaxed) else { return }
        throw ProVideoError(.cancelled, "cancelled: \(step()) was stopped; nothing was left half-done")
    }

    /// Passes progress to the operation's handler, if this thread runs one.
    static func report(_ done: Int64, _ total: Int64) {
        current?.progress?(done, total)
    }
}

import Synchronization

/// Progress of the copies this process makes to another filesystem (a recording whose
/// destination a rename cannot reach), for a command-line progress line. One observer per
/// process; the library calls it from the copying thread.
package enum CopyProgress {
    package enum Step: Sendable {
        /// Bytes copied to the destination's filesystem.
        case copying
        /// Bytes read back for the SHA-256 comparison: the recording, then the copy.
        case verifying
    }

    /// Called with the step, bytes done and bytes in the step.
    package typealias Observer = @Sendable (_ step: Step, _ done: Int64, _ total: Int64) -> Void

    private static let observer = Mutex<Observer?>(nil)

    /// Sets (or with nil, removes) the observer.
    package static func observe(_ newObserver: Observer?) {
        observer.withLock { $0 = newObserver }
    }

    static func report(_ step: Step, _ done: Int64, _ total: Int64) {
        observer.withLock { $0 }?(step, done, total)
        OperationContext.report(done, total)
    }
}

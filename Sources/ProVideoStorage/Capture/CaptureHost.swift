import ProVideoSystem
import ProVideoJournal

/// What a capture needs of its pool, and nothing more, so that `Capture` does not hold the
/// `Pool` it came from (issue 26: no Pool⇄Capture cycle of types). `Pool.startCapture` makes
/// it: the system calls, the device's optimal I/O size, the reserve (for the capture's own
/// remaining capacity), the spare a full btrfs releases, and the two steps that end a capture.
struct CaptureHost {
    let calls: SystemCalls
    /// The device's optimal I/O size in bytes, 0 when unknown (sizes the writes).
    let optimalIOSize: Int
    let reserve: Reserve
    /// The pool's metadata spare (`MetadataSpare`), released once when btrfs refuses a write.
    let spare: MetadataSpare?
    /// Places the finished recording of `length` bytes, gives back the capture's unused space
    /// and removes its files (`Pool.completeCapture`); the control gets a copy's progress and
    /// may stop it. Returns where the recording is and whether it waits there to land in the
    /// background.
    let complete: (CaptureFiles, CaptureJournal, _ length: Int64, OperationControl) throws -> (path: String, landing: Bool)
    /// Discards the capture's recording and returns its space (`Pool.discardCapture`).
    let discard: (CaptureFiles) throws -> Void
}

import ProVideoSystem

extension Capture {
    /// Finishes the capture as `finish()` does, on a thread of its own: a recording whose
    /// destination is on another filesystem is copied and verified there, which takes seconds
    /// per gigabyte, and must not block the caller's actor. A rename on the pool's filesystem
    /// takes milliseconds either way.
    ///
    /// The capture must not be used by any other task while this runs (it is single-owner:
    /// hand it over with the task that finishes it).
    /// - Parameter progress: a copy reports its copy pass, then its two verification passes
    ///   (the recording, then the copy), each from 0 to the recording's length in bytes.
    /// - Returns: where the recording is and its length in bytes.
    /// - Throws: as `finish()`. When the task is cancelled during the copy or its
    ///   verification, the copy stops, nothing is left at the destination, and the recording
    ///   is kept in the pool (`Pool.listing()`, `Pool.moveHeldRecording(_:to:)` places it):
    ///   the error is `.cancelled` with its `path` in the pool. Cancellation is ignored while
    ///   the last writes and the final flush land and after the copy's final rename.
    @discardableResult
    public func finish(progress: ProVideoProgress? = nil) async throws -> RecordingResult {
        // The caller awaits the thread below until it has returned: one call at a time.
        let capture = self
        return try await OffThread.run("provideo-finish", cancellable: true, progress: progress) { control in
            let result: RecordingResult = try capture.finish(control: control)
            return result
        }
    }
}

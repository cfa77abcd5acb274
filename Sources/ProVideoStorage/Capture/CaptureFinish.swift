import ProVideoSystem
import ProVideoWritePath

/// The two ends of a capture: `finish`, which lands the take, and `cancel`, which discards it.
extension Capture {
    /// Writes the last partial buffer (padded to the alignment), cuts the file to `length`,
    /// flushes it, moves it to `destination` (a rename on the pool's filesystem, else a
    /// verified copy), flushes the directory, returns the unused reserve to the pool and
    /// clears `capturing`.
    /// - Returns: where the recording is and its length in bytes.
    /// - Throws: `.destinationExists` (the recording is kept in the pool, see the error's
    ///   path); `.ioError` "placed at DEST, but the directory could not be flushed" (the
    ///   recording is at its destination, its name not yet durable); the capture's first
    ///   error; a move error; `.captureClosed`. After a failed
    ///   write, `provideo recover` salvages the committed part.
    @discardableResult
    public func finish() throws -> RecordingResult { try finish(control: .none) }

    /// `finish()`, with a control that gets the progress of a copy to another filesystem and
    /// may stop it (the take is then kept in the pool, `.cancelled`).
    @discardableResult
    package func finish(control: OperationControl) throws -> RecordingResult {
        try enterCall()
        defer { leaveCall() }
        try checkOpen()
        let deadline = Self.now() + Self.stallLimit
        try guarded { try writer.finish(until: deadline) }
        state = .closed
        writer.shutdown(until: deadline)
        capacity = granter.stop()
        defer { claim.release() }
        let outcome = try host.complete(files, journal, length, control)
        return RecordingResult(path: outcome.path, length: length, statistics: statistics,
                               landingTo: outcome.landing ? journal.destination : nil)
    }

    /// Discards the recording and returns its capacity to the pool, once every request of the
    /// capture has completed or been cancelled.
    /// - Throws: the capture's first error once a write failed (`provideo recover` then
    ///   salvages the committed bytes); `.ioError` when requests did not complete within
    ///   `stallLimit` (the pool stays busy until this process exits); `.captureClosed`.
    public func cancel() throws {
        try enterCall()
        defer { leaveCall() }
        try checkOpen()
        guard writer.stopRequests() else {
            let error = ProVideoError(.ioError, "\(writer.outstanding) writes did not complete within "
                                      + "\(Self.stallLimit / 1_000_000_000) s of being cancelled; the pool stays busy "
                                      + "until this process exits", path: files.data)
            state = .failed(error)
            throw error
        }
        state = .closed
        _ = granter.stop()
        defer { claim.release() }
        try host.discard(files)
    }
}

import Glibc
import ProVideoSystem

/// The start of a capture, wired: `CaptureStart` is a value handed what it needs; these are the
/// pool's public spellings of it.
extension Pool {
    var captureStart: CaptureStart {
        CaptureStart(path: path, layout: layout, lock: lock, access: access, calls: calls, alignment: directIOAlignment.io,
                     slowestGrant: slowestGrant, completion: completion, reserve: { self.reserve($0) },
                     reloadConfiguration: {
                         let current = try PoolConfiguration.load(self.layout.configuration)
                         self.configuration = current
                         return current
                     },
                     salvageDeadCaptures: { try self.salvageDeadCaptures(control: .none) },
                     waitingToLand: { try self.landing.waiting() }, landingHint: { self.landing.hint() },
                     busyError: { self.busyError($0, action: $1) })
    }

    /// Starts a capture that will move its recording to `destination`. Several captures, from
    /// one process or many, may run in one pool at once (up to the pool's `maxCaptures`), each
    /// admitted against the pool's bandwidth.
    /// - Throws: `.busy` (a resize is running, or the pool's `maxCaptures` captures are);
    ///   `.bandwidthExceeded` when the running captures' bitrates and this one's exceed the
    ///   admissible bandwidth (unless `options.admitOverBandwidth`); `.notEnoughSpace` when the
    ///   remaining capacity is 0 or the filesystem has no room or inode for the capture's own
    ///   files; `.invalidDestination` when the destination's directory does not exist, is not a
    ///   directory or is not writable, or the destination is inside the pool;
    ///   `.destinationExists`; `.invalidArgument` for a negative `options.bitrate`.
    public func startCapture(to destination: String, options: CaptureOptions = CaptureOptions()) throws -> Capture {
        try startCapture(to: destination, options: options, owner: nil)
    }

    /// `startCapture(to:options:)` run by root for another user (`provideo mount
    /// --allow-other`): the capture is `owner`'s, as if that user had started it (its directory
    /// and file are theirs, `RecordingOwner`), so its finish and salvage place the recording
    /// only where that user could, and the recording is theirs. Without root, `owner` must be nil.
    package func startCapture(to destination: String, options: CaptureOptions, owner: uid_t?) throws -> Capture {
        try captureStart.start(to: destination, options: options, owner: owner)
    }
}

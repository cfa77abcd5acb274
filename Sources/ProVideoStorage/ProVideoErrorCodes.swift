import ProVideoSystem

// The library's error is the syscall layer's `ProVideoError` (re-exported: `LowerLayers.swift`)
// with the codes and remedies below, which only the library raises.

extension ProVideoError.Code {
        /// The filesystem or kernel cannot host a pool (see `Pool.isSupported(at:)`).
        public static let unsupported = Self(rawValue: "unsupported")
        /// No pool at the path (remedy `.create`).
        public static let poolNotFound = Self(rawValue: "poolNotFound")
        /// A pool already exists at the path.
        public static let poolExists = Self(rawValue: "poolExists")
        /// The pool is busy (a capture, a replenish or a resize is running).
        public static let busy = Self(rawValue: "busy")
        /// A capture reached the end of the reserve: the frame was not accepted.
        public static let storageFull = Self(rawValue: "storageFull")
        /// Every capture buffer was in flight and the overrun policy gave up.
        public static let overrun = Self(rawValue: "overrun")
        /// Starting the capture would take the pool's running captures past its admissible
        /// bandwidth (see `Pool.bandwidth`); the message names the numbers.
        public static let bandwidthExceeded = Self(rawValue: "bandwidthExceeded")
        /// The destination of a capture exists; it is never overwritten.
        public static let destinationExists = Self(rawValue: "destinationExists")
        /// The destination's directory does not exist, is not a directory or is not writable.
        public static let invalidDestination = Self(rawValue: "invalidDestination")
        /// The capture has already finished, been cancelled or failed.
        public static let captureClosed = Self(rawValue: "captureClosed")
}

extension ProVideoError.Remedy {
        /// Create a pool at the error's `path`: `Pool.create(at:capacity:)`, `provideo create`.
        public static let create = Self(rawValue: "create")
        /// Create the pool on the filesystem beneath a mount point that is not mounted:
        /// `Pool.create(…, onUnmountedFilesystem: true)`, `provideo create --force`.
        public static let createOnUnmountedFilesystem = Self(rawValue: "createOnUnmountedFilesystem")
        /// Start the capture anyway, over the pool's admissible bandwidth (frames may drop):
        /// `CaptureOptions.admitOverBandwidth`, `provideo record --force`.
        public static let admitOverBandwidth = Self(rawValue: "admitOverBandwidth")
        /// Salvage or discard what a recorder that stopped left in the pool: `Pool.recover(at:)`,
        /// `provideo recover`.
        public static let recover = Self(rawValue: "recover")
        /// Bring the reserve back to the pool's capacity: `Pool.replenish()`, `provideo replenish`.
        public static let replenish = Self(rawValue: "replenish")
        /// Change the pool's capacity: `Pool.resize(to:)`, `provideo resize`.
        public static let resize = Self(rawValue: "resize")
        /// Land the takes waiting for their destination: `provideo land`.
        public static let land = Self(rawValue: "land")
        /// Move the recording the pool holds that the error's `path` names to a destination:
        /// `Pool.moveHeldRecording(_:to:)`, `provideo move`.
        public static let move = Self(rawValue: "move")
        /// List the recordings the pool holds: `Pool.listing()`, `provideo list`.
        public static let list = Self(rawValue: "list")
        /// Place the committed bytes of captures whose journal is unreadable in a directory of
        /// the user's choice: `provideo recover --salvage-to DIR`.
        public static let salvageWithoutJournal = Self(rawValue: "salvageWithoutJournal")
        /// Find what in the pool's files disagrees with what they should be: `provideo check`.
        public static let check = Self(rawValue: "check")
        /// Remove the pool: `Pool.destroy()`, `provideo destroy`.
        public static let destroy = Self(rawValue: "destroy")
}

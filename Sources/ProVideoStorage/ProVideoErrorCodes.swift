import ProVideoSystem

// The library's error is the syscall layer's `ProVideoError` (re-exported: `LowerLayers.swift`)
// with the codes below, which only the library raises.

extension ProVideoError.Code {
        /// The filesystem or kernel cannot host a pool (see `Pool.isSupported(at:)`).
        public static let unsupported = Self(rawValue: "unsupported")
        /// No pool at the path; create one with `provideo create`.
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

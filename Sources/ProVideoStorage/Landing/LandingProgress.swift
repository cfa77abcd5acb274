
/// A recording waiting to land at its destination, as `status` and `list` show it. Sizes in
/// bytes, times in seconds.
package struct LandingProgress: Codable, Sendable, Equatable {
    /// Where the recording is, in the pool's `recordings/`.
    package var path: String
    package var destination: String
    package var length: Int64
    /// Bytes copied to the destination and flushed so far.
    package var landedBytes: Int64
    /// Whether a `provideo land` process is transferring it now; nil when that cannot be told
    /// (the take cannot be opened or its lock probed: `transferringUnknown` says why).
    package var transferring: Bool?
    package var transferringUnknown: String?
    /// The transfer's rate sustained since its attempt started (sleeps of `land --rate` and
    /// flushes included), in bytes per second, as of its last chunk.
    package var bytesPerSecond: Double?
    /// Seconds left at that rate.
    package var etaSeconds: Double?
    /// Failed attempts since the last success, and the last failure.
    package var attempts: Int
    package var lastError: String?
    /// When the next attempt is due after a failure, in seconds since 1970.
    package var nextAttemptAt: Double?
}

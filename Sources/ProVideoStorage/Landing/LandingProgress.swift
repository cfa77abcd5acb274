/// A recording waiting to land at its destination, as `status` and `list` show it. Sizes in
/// bytes, times in seconds.
public struct LandingProgress: Codable, Sendable, Equatable {
    /// Where the recording is, in the pool's `recordings/`.
    public var path: String
    public var destination: String
    public var length: Int64
    /// Bytes copied to the destination and flushed so far.
    public var landedBytes: Int64
    /// Whether a `provideo land` process is transferring it now.
    public var transferring: Bool
    /// The transfer's rate over its last chunk, in bytes per second.
    public var bytesPerSecond: Double?
    /// Seconds left at that rate.
    public var etaSeconds: Double?
    /// Failed attempts since the last success, and the last failure.
    public var attempts: Int
    public var lastError: String?
    /// When the next attempt is due after a failure, in seconds since 1970.
    public var nextAttemptAt: Double?
}

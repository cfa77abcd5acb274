/// Everything `provideo status` reports, in the shape of `status --json`. Sizes in bytes.
public struct PoolStatus: Codable, Sendable {
    public struct Capture: Codable, Sendable {
        public var destination: String
        public var engine: String
        /// Bytes that reached the disk so far.
        public var bytesWritten: Int64
        /// Bytes a crash cannot lose (flushed and committed).
        public var committedBytes: Int64
        /// Expected bitrate in bits per second.
        public var bitrate: Int64
        public var pid: Int32
    }

    public var path: String
    public var initialCapacity: Int64
    public var remainingCapacity: Int64
    /// Names of the busy reasons: "capturing", "replenishing", "adjustingCapacity".
    public var busyReasons: [String]
    public var filesystem: String
    public var directIOAlignment: DirectIOAlignment
    public var device: DeviceTopology
    /// What the filesystem really allocated for the pool's reserve and the running capture
    /// (`st_blocks` × 512).
    public var reservedBytesOnDisk: Int64
    public var zeroFilled: Bool
    /// The running capture's engine, else the engine a capture would use now.
    public var engine: String
    /// Recording time left at the running capture's bitrate, in seconds.
    public var recordingSecondsRemaining: Double?
    public var capture: Capture?
    /// The recordings waiting to land on their destination, with their progress.
    public var landing: [LandingProgress]?
    /// Bytes the pool's filesystem holds for recordings that have not landed yet: space the
    /// reserve gets back only once they are published at their destination.
    public var landingBytes: Int64?
}

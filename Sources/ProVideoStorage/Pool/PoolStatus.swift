import ProVideoJournal

/// Everything `provideo status` reports, in the shape of `status --json`. Sizes in bytes.
public struct PoolStatus: Codable, Sendable, Equatable {
    /// One running capture.
    public struct Capture: Codable, Sendable, Equatable {
        /// The capture's id: its directory in the pool's `captures/`.
        public var id: String
        public var destination: String
        package var engine: String
        /// Bytes that reached the disk so far.
        public var bytesWritten: Int64
        /// Bytes a crash cannot lose (flushed and committed).
        public var committedBytes: Int64
        /// Bytes the pool's reserve granted to the capture's file so far (written or not).
        var grantedBytes: Int64
        /// Expected bitrate in bits per second.
        public var bitrate: Int64
        public var pid: Int32
        /// Whether it was started over the pool's admissible bandwidth (`record --force`).
        package var admittedOverBandwidth: Bool
        /// Its overruns, retried short writes, buffers in flight, commits and latencies, as it
        /// last published them (`CaptureCounters`); nil before its first publication.
        package var counters: CaptureCounters?
        /// Why `bytesWritten` and `committedBytes` are floors, not the capture's figures: its
        /// commit record or progress block cannot be read (torn, `EIO`, garbled). nil when both
        /// were read.
        public var progressUnknown: String?
    }

    public var path: String
    public var initialCapacity: Int64
    public var remainingCapacity: Int64
    /// What the pool was doing, as `Pool.busyReasons` (in JSON, the reasons' names).
    public var busyReasons: BusyReasons
    /// true when the pool's filesystem is read-only (a read-only mount, or one the kernel
    /// remounted read-only after an error): the pool can be read, not changed (`Pool.isReadOnly`).
    package var readOnly: Bool?
    package var filesystem: String
    package var directIOAlignment: DirectIOAlignment
    package var device: DeviceTopology
    /// What the filesystem really allocated for the pool's reserve and the running capture
    /// (`st_blocks` × 512).
    package var reservedBytesOnDisk: Int64
    package var zeroFilled: Bool
    /// The running capture's engine, else the engine a capture would use now.
    package var engine: String
    /// Recording time left at the running captures' bitrates together, in seconds.
    public var recordingSecondsRemaining: Double?
    /// How many captures may run at once; nil: no limit.
    package var maxCaptures: Int?
    /// The durable write bandwidth captures are admitted against, in bits per second.
    package var bandwidth: Int64?
    /// The bitrate captures may declare together (`CaptureAdmission.admissibleShare` of `bandwidth`).
    package var admissibleBitrate: Int64?
    /// The bitrates the running captures declared, together, in bits per second.
    package var admittedBitrate: Int64
    /// Every running capture, in every process.
    public var captures: [Capture]
    /// The recordings waiting to land on their destination, with their progress.
    package var landing: [LandingProgress]?
    /// Bytes the pool's filesystem holds for recordings that have not landed yet: space the
    /// reserve gets back only once they are published at their destination.
    package var landingBytes: Int64?
    /// true while a lander of this pool waits for a slot of its fleet's landing budget
    /// (`provideo land --fleet`); nil otherwise.
    package var landingWaitsForFleetSlot: Bool?
    /// The I/O scheduler of each disk under the pool's filesystem, and whether it honours the
    /// landing's idle I/O priority (`IOScheduler`); nil where the filesystem has no block
    /// device (tmpfs, overlayfs).
    package var ioSchedulers: [IOScheduler]?
    /// Entries of `captures/` that may be running and cannot be read (`UndecidedCapture`);
    /// nil when there are none.
    package var undecided: [UndecidedCapture]?
    /// Entries of `captures/` that are not directories, each with what it is (a file, a link):
    /// no capture's, so nothing counts or refuses them; nil when there are none.
    package var strayEntries: [StrayCaptureEntry]?
    /// Why `remainingCapacity` is a floor, not the figure: one reason per running capture
    /// whose progress block cannot be read (it counts as having written all it was granted,
    /// `CapacityAccount.remainingFloor`); nil when the figure is exact.
    package var remainingCapacityIsAtLeast: [String]?
    /// How grants move the reserve's space into the captures' files, as this process's open of
    /// the pool probed it (`GrantMethod`); nil from a status made before it was recorded.
    package var grants: GrantMethod?
    /// On XFS, why grants do not exchange extents (the probe's or a refused exchange's error);
    /// nil while they do, and on other filesystems.
    package var grantsNote: String?
    /// The pool's filesystem discards online (`discard` in its mount options), with what it
    /// costs and the remedies; nil when it does not.
    package var onlineDiscard: OnlineDiscard?
}

/// An entry of `captures/` that is not a directory: the library makes only directories there.
package struct StrayCaptureEntry: Codable, Sendable, Equatable {
    /// Its name in `captures/`.
    package var name: String
    /// What it is ("a symbolic link", "a regular file", …).
    package var type: String
}

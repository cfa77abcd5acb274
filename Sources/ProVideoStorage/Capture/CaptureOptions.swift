import ProVideoIO

/// How a capture writes. Every field has a default; sizes in bytes, times in nanoseconds.
public struct CaptureOptions: Sendable {
    /// What `append` does when every buffer is in flight (the disk is behind).
    public enum OverrunPolicy: Sendable, Equatable {
        /// Wait for a buffer up to this many nanoseconds (at most `Capture.stallLimit`, 30 s:
        /// nothing waits longer on a device that stopped answering), then throw `.overrun`.
        case wait(nanoseconds: UInt64)
        /// Throw `.overrun` at once: the recorder drops the frame and keeps going.
        case fail

        /// When a call that started at `started` (`MonotonicTime` nanoseconds) stops waiting
        /// for a buffer or a grant: nil for `.fail`, which does not wait.
        func deadline(from started: UInt64) -> UInt64? {
            guard case .wait(let limit) = self else { return nil }
            return started + min(limit, Capture.stallLimit)
        }
    }

    /// Expected bitrate in bits per second (ProRes 422 HQ 2160p29.97 is ~880,000,000). Sizes
    /// the buffers when `bufferBudget` is nil and gives "recording time remaining".
    public var bitrate: Int64
    /// Total bytes of aligned buffers, allocated at capture start. Default: three seconds at
    /// `bitrate`, clamped to 32 MiB…1 GiB. Three seconds because write completions stalled up
    /// to 2.0–2.4 s under a noisy neighbour on the test machine's disk: with one second of
    /// buffers the pool dropped 34 of 1500 frames at 1800 Mbit/s; with two seconds it dropped
    /// 12 and 1 frames in two of six runs, each time when a write took two seconds or more
    /// (Docs/BENCHMARKS.md).
    public var bufferBudget: Int?
    /// Bytes per write. Default: 4 MiB rounded to the device's optimal I/O size when it
    /// reports one (large sequential writes keep the device streaming).
    public var writeSize: Int?
    /// How often the committed length is made durable (fdatasync, then the commit record), in
    /// nanoseconds. 0 commits after every frame that landed. A crash loses at most the frames
    /// of one interval plus the buffers in flight. Default 1 s.
    public var durabilityInterval: UInt64
    /// Default `.wait(nanoseconds: 2 s)`: a recorder that buffers frames upstream rides out a
    /// disk stall; one that cannot wait uses `.fail` and counts dropped frames.
    public var overrunPolicy: OverrunPolicy
    /// Default `.automatic`: io_uring, else pwrite.
    public var engine: EngineChoice
    /// When a recording for another filesystem is copied there. Default `.automatic`: in the
    /// background for network filesystems (`LandingMode`).
    public var landing: LandingMode = .automatic
    /// Start the capture even when its bitrate takes the pool's running captures past the
    /// admissible bandwidth (`CaptureAdmission.admissibleShare` of `Pool.bandwidth`); the journal and
    /// `status` say so. Default false: such a start throws `.bandwidthExceeded`.
    public var admitOverBandwidth: Bool
    /// Bytes the capture's file is granted from the pool's reserve at a time, ahead of its
    /// write head (Docs/MULTI-CHANNEL.md). Default: two seconds at `bitrate`, at least 16 MiB,
    /// at most 1 GiB and at most a sixteenth of the pool's capacity. The granter keeps a lead of
    /// at least four seconds at `bitrate` (at most an eighth of the pool) and two grants, longer
    /// after slow grants (`GrantLead`), so a running capture holds less than its lead and one
    /// grant beyond what it wrote: the space another capture can find stranded (`bytesHeldAhead`).
    public var grantSize: Int64?

    public init(bitrate: Int64 = 880_000_000, bufferBudget: Int? = nil, writeSize: Int? = nil,
                durabilityInterval: UInt64 = 1_000_000_000,
                overrunPolicy: OverrunPolicy = .wait(nanoseconds: 2_000_000_000),
                engine: EngineChoice = .automatic, admitOverBandwidth: Bool = false, grantSize: Int64? = nil) {
        self.bitrate = bitrate
        self.bufferBudget = bufferBudget
        self.writeSize = writeSize
        self.durabilityInterval = durabilityInterval
        self.overrunPolicy = overrunPolicy
        self.engine = engine
        self.admitOverBandwidth = admitOverBandwidth
        self.grantSize = grantSize
    }

    /// The grant size in bytes, rounded up to `unit` (the reserve's allocation unit). The
    /// default is also at most a sixteenth of the pool's `capacity`, so that a small pool is
    /// shared in small steps.
    package func grantStep(unit: Int64, capacity: Int64) -> Int64 {
        let wanted = grantSize ?? min(max(bitrate / 8 * 2, 16 << 20), 1 << 30, max(capacity / 16, unit))
        return max((wanted + unit - 1) / unit * unit, unit)
    }

    /// Bytes a running capture holds granted beyond what it wrote, at most, in a pool of
    /// `capacity` bytes whose grants are quick: its least lead (`GrantLead.fill`) and one step.
    /// Slower grants lengthen the lead, up to 24 s of stream.
    package func bytesHeldAhead(unit: Int64, capacity: Int64) -> Int64 {
        let step = grantStep(unit: unit, capacity: capacity)
        return GrantLead(step: step, bitrate: bitrate, room: capacity, sharers: 1, slowestGrant: 0).fill + step
    }

    /// The write size for `alignment` and the device's optimal I/O size (0 when unknown): a
    /// multiple of the optimal I/O size rounded up to the alignment, so that every buffer, and
    /// so every write's offset and address, stays aligned whatever the device reports (an
    /// optimal I/O size of 33,553,920 bytes is not a multiple of 4096).
    func resolvedWriteSize(alignment: Int, optimalIOSize: Int) -> Int {
        let unit = (max(alignment, optimalIOSize) + alignment - 1) / alignment * alignment
        let wanted = writeSize ?? (4 << 20)
        return max((wanted + unit - 1) / unit * unit, unit)
    }

    /// Number of buffers of `writeSize` bytes: at least 4 so one fills while others are in flight.
    package func bufferCount(writeSize: Int) -> Int {
        let threeSeconds = Int(min(max(bitrate / 8 * 3, 32 << 20), 1 << 30))
        return max((bufferBudget ?? threeSeconds) / writeSize, 4)
    }
}

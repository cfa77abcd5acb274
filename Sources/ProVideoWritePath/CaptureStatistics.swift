
/// What a capture did. Byte counts in bytes, latencies in nanoseconds.
public struct CaptureStatistics: Sendable {
    /// The engine that wrote the capture.
    public var engine: String
    /// Bytes accepted by `append`.
    public var bytes: Int64 = 0
    /// Calls to `append` that were accepted.
    public var frames: Int64 = 0
    /// Write completions received from the engine.
    package var writeCompletions: Int64 = 0
    /// Writes that completed short and were resubmitted from an aligned boundary.
    package var shortWritesRetried: Int64 = 0
    /// Requests made again after the pool's spare gave its blocks back: a write that failed
    /// with ENOSPC, as one into preallocated blocks can on a full btrfs.
    package var spareReleases: Int64 = 0
    /// Appends that found every buffer in flight (they waited or failed, per the policy).
    public var overruns: Int64 = 0
    /// Appends refused with `.overrun`.
    public var overrunFailures: Int64 = 0
    /// Of `overruns`, those whose frame found the file not yet granted that far: the
    /// filesystem's fallocate, not the disk's writes, was behind the stream.
    package var grantOverruns: Int64 = 0
    /// Buffers that filled while a commit's flush of their first bytes was in flight: their
    /// write waited for the flush, the recorder did not.
    package var buffersQueuedBehindFlush: Int64 = 0
    /// Calls to `patch(_:at:)` that patched earlier bytes.
    public var patches: Int64 = 0
    /// Durability commits (fdatasync + commit record) completed.
    public var commits: Int64 = 0
    /// Time `append` took, from call to return, in nanoseconds: refused frames included.
    package var appendLatency = LatencyHistogram()
    /// Time from a write's submission to its completion.
    package var completionLatency = LatencyHistogram()

    init(engine: String) { self.engine = engine }
}

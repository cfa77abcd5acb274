import ProVideoStorage

/// Where a simulated recorder hands its frames: the pool, or a file written the usual ways.
/// Used from one thread.
package protocol FrameWriter: AnyObject {
    /// What writes the bytes, for the report ("io_uring", "write(2)", "O_DIRECT pwrite(2)").
    var engine: String { get }
    /// Hands one frame over. Returns false when the writer refused it (a dropped frame).
    func append(_ frame: UnsafeRawBufferPointer) throws -> Bool
    /// Ends the recording with everything on disk, then releases it (a pool capture is
    /// cancelled so its capacity returns; a file is flushed, closed and removed).
    func close() throws
    /// Time from a write's submission to its completion, in nanoseconds.
    var completionLatency: LatencySummary { get }
    /// Of the frames it refused, those refused because the pool had not yet granted the space
    /// (`CaptureStatistics.grantOverruns`): the grants, not the disk's writes, were behind.
    var grantRefusals: Int { get }
}

extension FrameWriter {
    /// A file written the usual ways is granted nothing.
    package var grantRefusals: Int { 0 }
}

/// A benchmark's write path.
package enum BenchMode: String, CaseIterable, Codable, Sendable {
    /// Our engine: a capture into the pool's reserve.
    case pool
    /// Ordinary `write(2)` of each frame to a new file, what most recorders do.
    case buffered
    /// `O_DIRECT` appends of aligned buffers to a new, not preallocated file.
    case direct
    /// `write(2)` of each frame into a file of a capture mount of the pool (`provideo mount`).
    case mount
}

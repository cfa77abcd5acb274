import ProVideoStorage

/// Frames appended to a pool capture with the `.fail` overrun policy: a frame that finds every
/// buffer in flight is refused at once, as a recorder that cannot wait would drop it.
public final class PoolWriter: FrameWriter {
    private let capture: Capture

    /// Starts a capture in `pool` that would move to `destination` (it is cancelled on close).
    /// - Parameters:
    ///   - bitrate: bits per second; sizes the capture's buffers by default (one second's worth).
    ///   - bufferBudget: bytes of capture buffers, nil for the engine's default.
    ///   - writeSize: bytes per write (the same as direct mode's).
    public init(pool: Pool, destination: String, bitrate: Int64, bufferBudget: Int?, writeSize: Int) throws {
        let options = CaptureOptions(bitrate: bitrate, bufferBudget: bufferBudget, writeSize: writeSize, overrunPolicy: .fail)
        capture = try pool.startCapture(to: destination, options: options)
    }

    public var engine: String { capture.statistics.engine }

    public func append(_ frame: UnsafeRawBufferPointer) throws -> Bool {
        do {
            try capture.append(frame)
            return true
        } catch let error as ProVideoError where error.code == .overrun {
            return false
        }
    }

    public func close() throws { try capture.cancel() }

    public var completionLatency: LatencySummary { capture.statistics.completionLatency.summary }
}

import ProVideoStorage

/// Frames appended to a pool capture with the `.fail` overrun policy: a frame that finds every
/// buffer in flight is refused at once, as a recorder that cannot wait would drop it.
package final class PoolWriter: FrameWriter {
    private let capture: Capture
    private let inPlace: Bool

    /// Starts a capture in `pool` that would move to `destination` (it is cancelled on close).
    /// - Parameters:
    ///   - bitrate: bits per second; sizes the capture's buffers by default (one second's worth).
    ///   - bufferBudget: bytes of capture buffers, nil for the engine's default.
    ///   - writeSize: bytes per write (the same as direct mode's).
    ///   - inPlace: frames are produced in the capture's buffers, not copied in (the frame's
    ///     bytes are not written: an encoder or a capture card's DMA would write them there).
    package init(pool: Pool, destination: String, bitrate: Int64, bufferBudget: Int?, writeSize: Int,
                inPlace: Bool = false) throws {
        self.inPlace = inPlace
        let options = CaptureOptions(bitrate: bitrate, bufferBudget: bufferBudget, writeSize: writeSize, overrunPolicy: .fail)
        capture = try pool.startCapture(to: destination, options: options)
    }

    package var engine: String { capture.statistics.engine }

    package func append(_ frame: UnsafeRawBufferPointer) throws -> Bool {
        do {
            if inPlace {
                try capture.append(count: frame.count) { _ in }
            } else {
                try capture.append(frame)
            }
            return true
        } catch let error as ProVideoError where error.code == .overrun {
            return false
        }
    }

    /// Waits for the writes in flight and commits them, as direct mode flushes its file, so
    /// every write's completion is counted (on a loaded machine all of a short run's completions
    /// came after its last append, and the run reported none), then cancels the capture.
    package func close() throws {
        try capture.commitAppended()
        try capture.cancel()
    }

    package var completionLatency: LatencySummary { capture.statistics.completionLatency.summary }

    package var grantRefusals: Int { Int(capture.statistics.grantOverruns) }
}

import ProVideoStorage

/// What one measuring run simulates. Sizes in bytes, rates in bits per second.
package struct RunPlan: Sendable {
    /// Simultaneous recorders, each on its own thread (and, in pool mode, its own pool).
    package var streams: Int
    /// Each stream's rate in bits per second.
    package var bitrate: Int64
    /// Frames per second.
    package var fps: Double
    /// Every stream's frames.
    package var sizes: FrameSizes
    /// Frames a capture card holds while its recorder is busy; see `FrameAccounting`.
    package var inputQueueFrames: Int
    /// Bytes per write in pool and direct modes (4 MiB is the pool engine's default).
    package var writeSize: Int
    /// Where buffered and direct modes create their files: on the pool's filesystem.
    package var scratchDirectory: String
    /// The pool captures' buffer budget in bytes; nil for the engine's default (one second
    /// at the bitrate, 16…256 MiB).
    package var bufferBudget: Int?
    /// Pool mode gives the recorder each frame's place in the capture's buffers
    /// (`Capture.append(count:filling:)`) instead of copying the frame in.
    package var inPlace: Bool
    /// When set, every recorder thread (in every mode) runs under `SCHED_FIFO` at this
    /// priority (1…99), as capture applications run the thread that takes frames from the
    /// card; nil leaves them at the default policy.
    package var realtimePriority: Int32?

    package init(streams: Int, bitrate: Int64, fps: Double, sizes: FrameSizes, inputQueueFrames: Int = 2,
                writeSize: Int = 4 << 20, scratchDirectory: String, bufferBudget: Int? = nil, inPlace: Bool = false) {
        self.inPlace = inPlace
        self.streams = streams
        self.bitrate = bitrate
        self.fps = fps
        self.sizes = sizes
        self.inputQueueFrames = inputQueueFrames
        self.writeSize = writeSize
        self.scratchDirectory = scratchDirectory
        self.bufferBudget = bufferBudget
    }

    /// Nanoseconds the run lasts (one stream's frames).
    package var durationNanoseconds: UInt64 { UInt64((Double(sizes.sizes.count) * 1e9 / fps).rounded()) }
}

extension RunPlan {
    /// Reserve bytes one stream's capture takes from a pool of `capacity` bytes: every frame,
    /// the grants held ahead of its head at the default step for `bitrate`
    /// (`CaptureOptions.bytesHeldAhead`), and 16 MiB for its last padded block and allocation
    /// rounding (Docs/MULTI-CHANNEL.md).
    package static func poolBytes(perStream bytes: Int64, bitrate: Int64, capacity: Int64) -> Int64 {
        bytes + CaptureOptions(bitrate: bitrate).bytesHeldAhead(unit: 1, capacity: capacity) + (16 << 20)
    }

    /// A warning when every stream's frames fit in its capture's buffers (`bufferBudget`, else
    /// the engine's default): such a run never waits on the disk and proves nothing about it.
    package var shortRunWarning: String? {
        let options = CaptureOptions(bitrate: bitrate, bufferBudget: bufferBudget)
        let budget = Int64(options.bufferCount(writeSize: writeSize) * writeSize)
        guard sizes.total <= budget else { return nil }
        let seconds = Double(budget) * 8 / Double(max(bitrate, 1))
        return "each stream writes \(ByteFormat.human(sizes.total)), no more than its capture's buffers "
            + "(\(ByteFormat.human(budget))): every frame fits in memory and nothing waits on the disk. Run longer than "
            + String(format: "%.1f s", seconds) + " (several times longer) for a figure about the disk"
    }
}

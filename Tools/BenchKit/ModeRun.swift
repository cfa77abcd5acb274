import ProVideoStorage

/// One mode's measurement: every stream of one repeat.
public struct ModeRun: Sendable {
    /// When a frame was due (ns since the run's first frame) and how long its hand-over took (ns).
    public struct Sample: Sendable, Equatable {
        public var time: UInt64
        public var latency: UInt64
        /// Of `latency`, the nanoseconds the recorder's thread waited for a CPU (0 when not counted).
        public var cpuWait: UInt64
        /// Of `latency`, the nanoseconds it ran on a CPU (0 when not counted).
        public var onCPU: UInt64

        public init(time: UInt64, latency: UInt64, cpuWait: UInt64 = 0, onCPU: UInt64 = 0) {
            self.time = time
            self.latency = latency
            self.cpuWait = cpuWait
            self.onCPU = onCPU
        }
    }

    public var mode: BenchMode
    public var engine: String
    public var accounting: FrameAccounting
    /// Bytes the writers accepted.
    public var bytes: Int64
    /// Seconds from the first frame's due time until the last stream's data was on disk.
    public var seconds: Double
    /// User + system CPU seconds of this process during the run.
    public var cpuSeconds: Double
    /// Every hand-over of every stream, in stream order.
    public var samples: [Sample]
    /// Whether every stream's time waiting for a CPU was counted (`RunQueueDelay`).
    public var cpuWaitCounted = false
    /// The longest any stream's thread woke after a frame was due, in nanoseconds.
    public var latestWakeUp: UInt64 = 0
    /// Each stream's write completion latency, merged with `Percentiles.worst`.
    public var completionLatency: LatencySummary
}

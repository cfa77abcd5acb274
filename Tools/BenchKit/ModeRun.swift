import ProVideoStorage

/// One mode's measurement: every stream of one repeat.
package struct ModeRun: Sendable {
    /// When a frame was due (ns since the run's first frame) and how long its hand-over took (ns).
    package struct Sample: Sendable, Equatable {
        package var time: UInt64
        package var latency: UInt64
        /// Of `latency`, the nanoseconds the recorder's thread waited for a CPU (0 when not counted).
        package var cpuWait: UInt64
        /// Of `latency`, the nanoseconds it ran on a CPU (0 when not counted).
        package var onCPU: UInt64

        package init(time: UInt64, latency: UInt64, cpuWait: UInt64 = 0, onCPU: UInt64 = 0) {
            self.time = time
            self.latency = latency
            self.cpuWait = cpuWait
            self.onCPU = onCPU
        }
    }

    package var mode: BenchMode
    package var engine: String
    package var accounting: FrameAccounting
    /// Bytes the writers accepted.
    package var bytes: Int64
    /// Seconds from the first frame's due time until the last stream's data was on disk.
    package var seconds: Double
    /// User + system CPU seconds of this process during the run.
    package var cpuSeconds: Double
    /// Every hand-over of every stream, in stream order.
    package var samples: [Sample]
    /// When each dropped frame of every stream was due, in ns since the run's first frame.
    package var drops: [UInt64] = []
    /// Of the frames the writers refused, those awaiting a grant (`FrameWriter.grantRefusals`).
    package var framesAwaitingGrant = 0
    /// Whether every stream's time waiting for a CPU was counted (`RunQueueDelay`).
    package var cpuWaitCounted = false
    /// The longest any stream's thread woke after a frame was due, in nanoseconds.
    package var latestWakeUp: UInt64 = 0
    /// The longest any stream's frame waited past its due time for its thread, in nanoseconds
    /// (`SimulatedRecorder.latestTurn`).
    package var latestTurn: UInt64 = 0
    /// Each stream's write completion latency, merged with `Percentiles.worst`.
    package var completionLatency: LatencySummary
}

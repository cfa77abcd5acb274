import ProVideoStorage

/// One mode's results over all its repeats, in the shape `--json` prints. Throughput in bytes
/// per second, latencies in nanoseconds.
package struct ModeReport: Codable, Sendable {
    /// One repeat's headline numbers, to show how much the disk varied between runs.
    package struct Repeat: Codable, Sendable {
        package var throughput: Double
        package var framesLate: Int
        package var framesDropped: Int
        package var appendP999Ns: UInt64
    }

    package var throughput: Double
    package var framesOnTime: Int
    package var framesLate: Int
    package var framesDropped: Int
    /// Of `framesDropped`: refused by the writer (overruns), and overwritten in the input queue
    /// while the recorder was blocked.
    package var framesRefused: Int
    package var framesOverwritten: Int
    /// Of `framesRefused`, those the pool refused awaiting a grant (0 outside the pool mode):
    /// nonzero while the disk kept up is the grants' limit, not the disk's (issue 44).
    package var framesAwaitingGrant: Int
    /// Exact percentiles over every hand-over of every stream and repeat.
    package var appendLatencyNs: LatencySummary
    /// Where the time of the slowest 0.1% of hand-overs (those at or above
    /// `appendLatencyNs.p999`) went, as shares of it (`RunQueueDelay`); nil when the kernel did
    /// not count it.
    package struct TimeShares: Codable, Sendable, Equatable {
        /// Running on a CPU (copying, submitting).
        package var onCPU: Double
        /// Runnable, waiting for a CPU: starved by other threads.
        package var waitingForCPU: Double
        /// The rest: blocked in the kernel (a lock, the disk), or the CPU taken by interrupts
        /// or by the hypervisor (steal).
        package var elsewhere: Double
    }
    package var slowestAppends: TimeShares?
    /// The longest a recorder thread woke after its frame was due (ns): late frames with fast
    /// hand-overs are the thread not running (CPU starvation, or the host stopping the VM).
    package var latestWakeUpNs: UInt64
    /// The worst of each stream's and repeat's write completion percentiles (the captures'
    /// histograms cannot be merged exactly).
    package var completionLatencyNs: LatencySummary
    /// CPU seconds this process spent per 10^9 bytes accepted.
    package var cpuSecondsPerGB: Double
    package var engine: String
    package var bytes: Int64
    package var seconds: Double
    package var repeats: [Repeat]

    /// Combines the repeats of one mode.
    package init(_ runs: [ModeRun]) {
        var accounting = runs[0].accounting
        var completion = runs[0].completionLatency
        for run in runs.dropFirst() {
            accounting.add(run.accounting)
            completion = Percentiles.worst(completion, run.completionLatency)
        }
        bytes = runs.reduce(0) { $0 + $1.bytes }
        seconds = runs.reduce(0) { $0 + $1.seconds }
        throughput = seconds > 0 ? Double(bytes) / seconds : 0
        framesOnTime = accounting.onTime
        framesLate = accounting.late
        framesDropped = accounting.dropped
        framesRefused = accounting.refused
        framesOverwritten = accounting.overwritten
        framesAwaitingGrant = runs.reduce(0) { $0 + $1.framesAwaitingGrant }
        appendLatencyNs = Percentiles.summary(runs.flatMap { $0.samples.map(\.latency) })
        completionLatencyNs = completion
        latestWakeUpNs = runs.map(\.latestWakeUp).max() ?? 0
        slowestAppends = runs.allSatisfy(\.cpuWaitCounted)
            ? Self.shares(runs.flatMap(\.samples), atOrAbove: appendLatencyNs.p999) : nil
        let cpu = runs.reduce(0) { $0 + $1.cpuSeconds }
        cpuSecondsPerGB = bytes > 0 ? cpu / (Double(bytes) / 1e9) : 0
        engine = runs[0].engine
        repeats = runs.map { run in
            Repeat(throughput: run.seconds > 0 ? Double(run.bytes) / run.seconds : 0, framesLate: run.accounting.late,
                   framesDropped: run.accounting.dropped,
                   appendP999Ns: Percentiles.summary(run.samples.map(\.latency)).p999)
        }
    }

    /// The shares of the samples at or above `threshold`. A sample's CPU and wait times come
    /// from two clocks read a few instructions apart from its latency's, so each is capped by
    /// what its latency leaves: the shares never add up to more than 1.
    static func shares(_ samples: [ModeRun.Sample], atOrAbove threshold: UInt64) -> TimeShares? {
        let slowest = samples.filter { $0.latency >= threshold }
        let total = Double(slowest.reduce(0) { $0 + $1.latency })
        guard total > 0 else { return nil }
        var (onCPU, waiting): (UInt64, UInt64) = (0, 0)
        for sample in slowest {
            let ran = min(sample.onCPU, sample.latency)
            onCPU += ran
            waiting += min(sample.cpuWait, sample.latency - ran)
        }
        let (ranShare, waitShare) = (Double(onCPU) / total, Double(waiting) / total)
        return TimeShares(onCPU: ranShare, waitingForCPU: waitShare, elsewhere: max(0, 1 - ranShare - waitShare))
    }
}

/// How one mode compares with another: each field is this mode's value divided by the other's
/// (nil when the other's is 0).
package struct ModeRatios: Codable, Sendable {
    package var throughput: Double?
    package var appendP99: Double?
    package var appendP999: Double?
    package var appendMax: Double?
    package var cpuSecondsPerGB: Double?

    package init(_ mode: ModeReport, over other: ModeReport) {
        func ratio(_ a: Double, _ b: Double) -> Double? { b > 0 ? a / b : nil }
        throughput = ratio(mode.throughput, other.throughput)
        appendP99 = ratio(Double(mode.appendLatencyNs.p99), Double(other.appendLatencyNs.p99))
        appendP999 = ratio(Double(mode.appendLatencyNs.p999), Double(other.appendLatencyNs.p999))
        appendMax = ratio(Double(mode.appendLatencyNs.max), Double(other.appendLatencyNs.max))
        cpuSecondsPerGB = ratio(mode.cpuSecondsPerGB, other.cpuSecondsPerGB)
    }
}

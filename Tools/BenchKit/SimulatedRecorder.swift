/// One recorder: delivers `sizes` frames at `fps` on `clock`, hands each to a `FrameWriter`
/// and accounts for it. Every sample array is allocated before the first frame.
package final class SimulatedRecorder {
    package let sizes: FrameSizes
    /// Frames per second (29.97 is 30000/1001).
    package let fps: Double
    package private(set) var accounting: FrameAccounting
    /// Bytes the writer accepted.
    package private(set) var bytes: Int64 = 0
    /// Nanoseconds each hand-over (append) took; the first `sampleCount` entries are valid.
    package private(set) var appendLatency: [UInt64]
    /// Nanoseconds from the first frame's due time to the due time of each sampled frame.
    package private(set) var sampleTimes: [UInt64]
    /// Nanoseconds of each hand-over the thread spent runnable but waiting for a CPU
    /// (`RunQueueDelay`; all 0 when the kernel does not count it, see `cpuWaitCounted`).
    package private(set) var cpuWait: [UInt64]
    /// Nanoseconds of each hand-over the thread ran on a CPU (`ThreadCPUTime`).
    package private(set) var onCPU: [UInt64]
    /// Whether the kernel counted the time waiting for a CPU during the run.
    package private(set) var cpuWaitCounted = false
    package private(set) var sampleCount = 0
    /// Nanoseconds from the first frame's due time to the due time of each dropped frame
    /// (refused or overwritten); the first `dropCount` entries are valid.
    package private(set) var dropTimes: [UInt64]
    package private(set) var dropCount = 0
    /// The longest this thread woke after a frame was due while it slept (not while it was
    /// still handing over an earlier frame), in nanoseconds: a frame can be late with every
    /// hand-over fast when the thread itself did not run.
    package private(set) var latestWakeUp: UInt64 = 0
    /// The longest any frame waited past its due time before the thread turned to it, in
    /// nanoseconds (late wake-ups and long hand-overs of earlier frames together): a card's
    /// queue of fewer frames than this spans overwrites one (`FrameAccounting.isStillQueued`).
    package private(set) var latestTurn: UInt64 = 0

    /// - Parameter inputQueueFrames: frames the capture card holds while the recorder is busy.
    package init(sizes: FrameSizes, fps: Double, inputQueueFrames: Int) {
        self.sizes = sizes
        self.fps = fps
        accounting = FrameAccounting(interval: UInt64((1e9 / fps).rounded()), inputQueueFrames: inputQueueFrames)
        appendLatency = Array(repeating: 0, count: sizes.sizes.count)
        sampleTimes = Array(repeating: 0, count: sizes.sizes.count)
        cpuWait = Array(repeating: 0, count: sizes.sizes.count)
        onCPU = Array(repeating: 0, count: sizes.sizes.count)
        dropTimes = Array(repeating: 0, count: sizes.sizes.count)
    }

    /// Nanoseconds from the first frame to frame `index`.
    package func offset(of index: Int) -> UInt64 { UInt64((Double(index) * 1e9 / fps).rounded()) }

    /// Runs the stream: frame `i` is due at `start + offset(of: i)` (ns on `clock`).
    /// - Parameters:
    ///   - source: at least `sizes.largest` bytes; each frame is its first `size` bytes.
    ///   - onFrame: called after every frame (progress), with what became of it.
    ///   - stopped: checked before each frame; true ends the stream there (a sizing trial that
    ///     has seen enough).
    package func run(writer: FrameWriter, source: UnsafeRawBufferPointer, clock: BenchClock, start: UInt64,
                    stopped: () -> Bool = { false }, onFrame: (FrameFate) -> Void = { _ in }) throws {
        let delay = RunQueueDelay()
        cpuWaitCounted = delay != nil
        var idleSince: UInt64 = 0
        for (index, size) in sizes.sizes.enumerated() {
            if Interruption.requested || stopped() { break }
            let due = start + offset(of: index)
            clock.sleep(until: due)
            let begin = clock.now()
            let ready = max(due, idleSince)
            latestWakeUp = max(latestWakeUp, begin &- min(begin, ready))
            latestTurn = max(latestTurn, begin &- min(begin, due))
            defer { idleSince = clock.now() }
            let (waitedBefore, ranBefore) = (delay?.nanoseconds() ?? 0, ThreadCPUTime.nanoseconds())
            guard accounting.isStillQueued(due: due, now: begin) else {
                dropTimes[dropCount] = due - start
                dropCount += 1
                onFrame(.overwritten)
                continue
            }
            let accepted = try writer.append(UnsafeRawBufferPointer(rebasing: source[0..<size]))
            let end = clock.now()
            onCPU[sampleCount] = ThreadCPUTime.nanoseconds() &- ranBefore
            cpuWait[sampleCount] = (delay?.nanoseconds() ?? 0) &- waitedBefore
            accounting.handedOver(due: due, end: end, accepted: accepted)
            appendLatency[sampleCount] = end - begin
            sampleTimes[sampleCount] = due - start
            sampleCount += 1
            if accepted {
                bytes += Int64(size)
            } else {
                dropTimes[dropCount] = due - start
                dropCount += 1
            }
            onFrame(accepted ? .handedOver : .refused)
        }
    }
}

/// What became of one frame of a `SimulatedRecorder`.
package enum FrameFate: Sendable {
    case handedOver
    /// The writer refused it (every buffer in flight, or its take not granted that far).
    case refused
    /// The card's queue overwrote it before the recorder's thread turned to it.
    case overwritten
}

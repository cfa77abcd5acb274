import Foundation
import ProVideoStorage
import Synchronization

/// Runs one mode once: one thread per stream, each a `SimulatedRecorder` with its own writer.
package enum ModeRunner {
    /// Frames handed over or dropped so far, for progress while a run goes on.
    package final class Progress: Sendable {
        package let frames = Atomic<Int>(0)
        package let dropped = Atomic<Int>(0)
        /// Of `dropped`, the frames the writers refused (the rest were overwritten in the card's queue).
        package let refused = Atomic<Int>(0)
        /// Set to end every stream at its next frame (a sizing trial that has seen enough).
        package let stopRequested = Atomic<Bool>(false)
        package init() {}
    }

    /// A stream's thread and what it leaves behind.
    private final class Stream: @unchecked Sendable {
        let recorder: SimulatedRecorder
        let writer: FrameWriter
        var error: Error?
        var end: UInt64 = 0

        init(recorder: SimulatedRecorder, writer: FrameWriter) {
            self.recorder = recorder
            self.writer = writer
        }
    }

    private final class Shared: @unchecked Sendable {
        let source: AlignedMemory
        let clock: BenchClock
        init(source: AlignedMemory, clock: BenchClock) {
            self.source = source
            self.clock = clock
        }
    }

    /// Runs `mode` with `plan`.
    /// - Parameters:
    ///   - pool: the pool every stream records into, for pool mode.
    ///   - tick: called about once a second on this thread while the streams run.
    /// - Throws: the first stream's error, after every writer was closed.
    ///   - writers: makes stream N's writer instead of the mode's own (a sizing trial's
    ///     segmented captures).
    package static func run(_ mode: BenchMode, plan: RunPlan, pool: Pool, clock: BenchClock = MonotonicClock(),
                           progress: Progress = Progress(), writers: ((Int) throws -> FrameWriter)? = nil,
                           tick: () -> Void = {}) throws -> ModeRun {
        let source = try AlignedMemory(length: max(plan.sizes.largest, 1), alignment: 4096)
        fillPattern(source.bytes)
        let mount = mode == .mount
            ? try CaptureMountProcess(pool: pool, directory: plan.scratchDirectory + "/mount-\(getpid())", bitrate: plan.bitrate)
            : nil
        defer { mount?.stop() }
        var streams: [Stream] = []
        do {
            for index in 0..<plan.streams {
                let writer = try writers?(index) ?? makeWriter(mode, plan: plan, stream: index, pool: pool, mount: mount)
                streams.append(Stream(recorder: SimulatedRecorder(sizes: plan.sizes, fps: plan.fps,
                                                                  inputQueueFrames: plan.inputQueueFrames),
                                      writer: writer))
            }
        } catch {
            for stream in streams { try? stream.writer.close() }
            throw error
        }
        let shared = Shared(source: source, clock: clock)
        let cpuBefore = CPUTime.seconds() + (mount?.cpuSeconds ?? 0)
        // Streams are spread over one frame interval, as independent sources would be.
        let start = clock.now() + 20_000_000
        let interval = UInt64((1e9 / plan.fps).rounded())
        let group = DispatchGroup()
        for (index, stream) in streams.enumerated() {
            group.enter()
            let streamStart = start + interval * UInt64(index) / UInt64(plan.streams)
            let thread = Thread {
                do {
                    if let priority = plan.realtimePriority { try RealtimePriority.apply(priority) }
                    try stream.recorder.run(writer: stream.writer, source: UnsafeRawBufferPointer(shared.source.bytes),
                                            clock: shared.clock, start: streamStart,
                                            stopped: { progress.stopRequested.load(ordering: .relaxed) }) { fate in
                        progress.frames.add(1, ordering: .relaxed)
                        if fate != .handedOver { progress.dropped.add(1, ordering: .relaxed) }
                        if fate == .refused { progress.refused.add(1, ordering: .relaxed) }
                    }
                } catch { stream.error = error }
                do { try stream.writer.close() } catch { stream.error = stream.error ?? error }
                stream.end = shared.clock.now()
                group.leave()
            }
            thread.name = "\(mode.rawValue)-\(index)"
            thread.start()
        }
        while group.wait(timeout: .now() + 1) == .timedOut { tick() }
        let cpuSeconds = CPUTime.seconds() + (mount?.cpuSeconds ?? 0) - cpuBefore
        if let error = streams.compactMap(\.error).first { throw error }
        return summarize(mode, streams, start: start, cpuSeconds: cpuSeconds)
    }

    private static func summarize(_ mode: BenchMode, _ streams: [Stream], start: UInt64, cpuSeconds: Double) -> ModeRun {
        var accounting = streams[0].recorder.accounting
        var completion = streams[0].writer.completionLatency
        for stream in streams.dropFirst() {
            accounting.add(stream.recorder.accounting)
            completion = Percentiles.worst(completion, stream.writer.completionLatency)
        }
        var samples: [ModeRun.Sample] = []
        for stream in streams {
            let recorder = stream.recorder
            for i in 0..<recorder.sampleCount {
                samples.append(ModeRun.Sample(time: recorder.sampleTimes[i], latency: recorder.appendLatency[i],
                                              cpuWait: recorder.cpuWait[i], onCPU: recorder.onCPU[i]))
            }
        }
        let end = streams.map(\.end).max() ?? start
        var run = ModeRun(mode: mode, engine: streams[0].writer.engine, accounting: accounting,
                       bytes: streams.reduce(0) { $0 + $1.recorder.bytes },
                       seconds: Double(end - start) / 1e9, cpuSeconds: cpuSeconds, samples: samples,
                       completionLatency: completion)
        run.framesAwaitingGrant = streams.reduce(0) { $0 + $1.writer.grantRefusals }
        run.drops = streams.flatMap { $0.recorder.dropTimes.prefix($0.recorder.dropCount) }.sorted()
        run.latestWakeUp = streams.map(\.recorder.latestWakeUp).max() ?? 0
        run.latestTurn = streams.map(\.recorder.latestTurn).max() ?? 0
        run.cpuWaitCounted = streams.allSatisfy(\.recorder.cpuWaitCounted)
        return run
    }

    private static func makeWriter(_ mode: BenchMode, plan: RunPlan, stream: Int, pool: Pool,
                                   mount: CaptureMountProcess?) throws -> FrameWriter {
        let file = "\(plan.scratchDirectory)/\(mode.rawValue)-\(stream)-\(getpid()).mov"
        switch mode {
        case .pool:
            return try PoolWriter(pool: pool, destination: file, bitrate: plan.bitrate, bufferBudget: plan.bufferBudget,
                                  writeSize: plan.writeSize, inPlace: plan.inPlace)
        case .buffered:
            return try BufferedWriter(path: file)
        case .direct:
            let alignment = try StorageFacts.read(plan.scratchDirectory).directIOAlignment.io
            return try DirectWriter(path: file, writeSize: (plan.writeSize + alignment - 1) / alignment * alignment,
                                    alignment: alignment)
        case .mount:
            return try BufferedWriter(path: "\(mount!.mountpoint)/\(mode.rawValue)-\(stream).mov",
                                      engine: "write(2) into provideo mount")
        }
    }

    /// Fills `bytes` with a xorshift sequence: frame data that no layer can compress or skip.
    static func fillPattern(_ bytes: UnsafeMutableRawBufferPointer) {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        let words = bytes.count / 8
        let typed = bytes.baseAddress!.bindMemory(to: UInt64.self, capacity: words)
        for i in 0..<words {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            typed[i] = state
        }
    }
}

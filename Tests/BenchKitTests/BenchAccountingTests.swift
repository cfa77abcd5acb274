import Foundation
@testable import BenchKit
import ProVideoStorage
import TestSupport
import Testing

/// A clock that only moves when told: sleeping jumps to the deadline, a writer advances it.
final class FakeClock: BenchClock {
    var time: UInt64 = 1_000_000_000
    func now() -> UInt64 { time }
    func sleep(until deadline: UInt64) { time = max(time, deadline) }
}

/// A writer whose appends take scripted nanoseconds on a `FakeClock`, and refuse when scripted.
final class ScriptedWriter: FrameWriter {
    let clock: FakeClock
    var durations: [UInt64]
    var refusals: Set<Int>
    private(set) var calls = 0

    init(clock: FakeClock, durations: [UInt64], refusals: Set<Int> = []) {
        self.clock = clock
        self.durations = durations
        self.refusals = refusals
    }

    var engine: String { "scripted" }
    var completionLatency: LatencySummary { LatencySummary(p50: 0, p99: 0, p999: 0, max: 0) }
    func close() throws {}

    func append(_ frame: UnsafeRawBufferPointer) throws -> Bool {
        defer { calls += 1 }
        clock.time += calls < durations.count ? durations[calls] : 0
        return !refusals.contains(calls)
    }
}

/// A writer that takes every frame at once.
final class AcceptingWriter: FrameWriter {
    var engine: String { "accepting" }
    var completionLatency: LatencySummary { LatencySummary(p50: 0, p99: 0, p999: 0, max: 0) }
    func close() throws {}
    func append(_ frame: UnsafeRawBufferPointer) throws -> Bool { true }
}

@Suite struct BenchAccountingTests {
    let interval: UInt64 = 40_000_000  // 25 fps

    @Test func sortsOneFrameAtATime() {
        var accounting = FrameAccounting(interval: interval, inputQueueFrames: 2)
        accounting.handedOver(due: 0, end: interval, accepted: true)          // exactly one interval: on time
        accounting.handedOver(due: 0, end: interval + 1, accepted: true)      // 1 ns over: late
        accounting.handedOver(due: 0, end: 1, accepted: false)                // refused: dropped
        let queued = accounting.isStillQueued(due: 0, now: 2 * interval)       // still in the card's queue
        let overwritten = !accounting.isStillQueued(due: 0, now: 2 * interval + 1)  // overwritten: dropped
        #expect(queued && overwritten)
        #expect(accounting.onTime == 1 && accounting.late == 1 && accounting.dropped == 2)
        #expect(accounting.refused == 1 && accounting.overwritten == 1)
    }

    @Test func aRecorderBlockedInWriteLosesTheFramesItsQueueCannotHold() throws {
        let clock = FakeClock()
        let ms: UInt64 = 1_000_000
        // Frame 0 blocks for 150 ms (3.75 intervals): frame 1 and 2 wait in the queue (late),
        // frame 1 is 110 ms old when taken, frame 2 70 ms, frame 3 30 ms: with a queue of 2
        // frames (80 ms) frame 1 is dropped; 2 and 3 are handed over; frame 4 is refused.
        let writer = ScriptedWriter(clock: clock, durations: [150 * ms, 0, 0, 0, 0, 0], refusals: [3])
        let recorder = SimulatedRecorder(sizes: FrameSizes(sizes: Array(repeating: 16, count: 6)), fps: 25, inputQueueFrames: 2)
        let source = [UInt8](repeating: 0, count: 16)
        try source.withUnsafeBytes { bytes in
            try recorder.run(writer: writer, source: bytes, clock: clock, start: clock.time)
        }
        // Frame 0 ended at 150 ms (late); frame 1 (due 40) dropped at 150 ms; frame 2 (due 80)
        // ends at 150 ms (late, > 120); frame 3 (due 120) ends at 150 ms (on time, ≤ 160);
        // frame 4 (due 160) refused; frame 5 (due 200) on time.
        #expect(recorder.accounting.onTime == 2)
        #expect(recorder.accounting.late == 2)
        #expect(recorder.accounting.dropped == 2)
        #expect(recorder.accounting.refused == 1 && recorder.accounting.overwritten == 1)
        #expect(writer.calls == 5)
        #expect(recorder.sampleCount == 5)
        #expect(recorder.appendLatency[0] == 150 * ms)
        #expect(recorder.bytes == 4 * 16)
        // The two drops, as the plot ticks them: frame 1 (overwritten) and frame 4 (refused).
        #expect(Array(recorder.dropTimes.prefix(recorder.dropCount)) == [40 * ms, 160 * ms])
        // Frames 1–3 waited for frame 0's hand-over, not for the thread to wake.
        #expect(recorder.latestWakeUp == 0)
        // Frame 1 waited longest for the thread, 110 ms: a queue of 3 frames (120 ms) would have kept it.
        #expect(recorder.latestTurn == 110 * ms)
    }

    @Test func aThreadThatWakesLateIsMeasuredApartFromItsHandOvers() throws {
        /// Oversleeps the third deadline by 30 ms, as a thread the scheduler or the host did not run.
        final class OversleepingClock: BenchClock {
            var time: UInt64 = 1_000_000_000
            var sleeps = 0
            func now() -> UInt64 { time }
            func sleep(until deadline: UInt64) {
                sleeps += 1
                time = max(time, deadline) + (sleeps == 3 ? 30_000_000 : 0)
            }
        }
        let clock = OversleepingClock()
        let recorder = SimulatedRecorder(sizes: FrameSizes(sizes: Array(repeating: 16, count: 5)), fps: 25, inputQueueFrames: 2)
        let writer = AcceptingWriter()
        try [UInt8](repeating: 0, count: 16).withUnsafeBytes { bytes in
            try recorder.run(writer: writer, source: bytes, clock: clock, start: clock.time)
        }
        #expect(recorder.latestWakeUp == 30_000_000)
        #expect(recorder.latestTurn == 30_000_000)
        #expect(recorder.appendLatency.prefix(recorder.sampleCount).allSatisfy { $0 == 0 })
        #expect(recorder.accounting.onTime == 5)
    }

    @Test func reportCombinesRepeatsAndComputesRatios() {
        func run(_ mode: BenchMode, latencies: [UInt64], dropped: Int) -> ModeRun {
            var accounting = FrameAccounting(interval: interval, inputQueueFrames: 2)
            for latency in latencies { accounting.handedOver(due: 0, end: latency, accepted: true) }
            for _ in 0..<dropped { accounting.handedOver(due: 0, end: 0, accepted: false) }
            return ModeRun(mode: mode, engine: mode.rawValue, accounting: accounting, bytes: 1_000_000_000, seconds: 2,
                           cpuSeconds: 0.5, samples: latencies.map { ModeRun.Sample(time: 0, latency: $0) },
                           completionLatency: LatencySummary(p50: 1, p99: 2, p999: 3, max: 4))
        }
        let plan = RunPlan(streams: 1, bitrate: 8, fps: 25, sizes: FrameSizes(sizes: [1]), scratchDirectory: "/tmp")
        var awaiting = run(.pool, latencies: [30, 40], dropped: 0)
        awaiting.framesAwaitingGrant = 3
        let report = BenchReport(plan: plan, runs: [run(.pool, latencies: [10, 20], dropped: 0),
                                                   run(.buffered, latencies: [100, 200 * interval], dropped: 1),
                                                   awaiting],
                                 repeatCount: 2, noise: "none", frameTrace: nil)
        let pool = report.modes["pool"]!
        #expect(pool.framesOnTime == 4 && pool.framesDropped == 0)
        #expect(pool.framesAwaitingGrant == 3 && report.modes["buffered"]?.framesAwaitingGrant == 0)
        #expect(pool.appendLatencyNs.max == 40 && pool.appendLatencyNs.p50 == 20)
        #expect(pool.throughput == 0.5e9)
        #expect(pool.cpuSecondsPerGB == 0.5)
        #expect(pool.repeats.count == 2)
        #expect(report.modes["buffered"]!.framesLate == 1 && report.modes["buffered"]!.framesDropped == 1)
        #expect(report.modes["buffered"]!.framesRefused == 1 && report.modes["buffered"]!.framesOverwritten == 0)
        #expect(report.ratios["buffered/pool"]?.appendMax == Double(200 * interval) / 40)
        #expect(report.modes["direct"] == nil)
    }
}

@Suite struct BenchWorkspaceTests {
    /// A SIGKILLed run leaves /var/tmp/provideo-bench-<pid>; the next run names it, and never
    /// a directory whose process still runs.
    @Test func namesOnlyScratchDirectoriesOfDeadRuns() throws {
        let exited = Process()
        exited.executableURL = URL(fileURLWithPath: "/bin/true")
        try exited.run()
        exited.waitUntilExit()
        let dead = "/var/tmp/provideo-bench-\(exited.processIdentifier)"
        let alive = "/var/tmp/provideo-bench-\(getpid())"
        for directory in [dead, alive] { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }
        defer { for directory in [dead, alive] { try? FileManager.default.removeItem(atPath: directory) } }
        let stale = BenchWorkspace.staleScratchDirectories()
        #expect(stale.contains(dead))
        #expect(!stale.contains(alive))
    }
}

import Foundation
@testable import BenchKit
import Glibc
import ProVideoStorage
import Synchronization
import TestSupport
import Testing

/// Where slow hand-overs spent their time, real-time recorder threads, and the host's free
/// page reporting: the parts of the bench that explain a run's tail.
@Suite struct BenchSchedulingTests {
    @Test func slowestHandOversAreSplitIntoCPUWaitAndTheRest() {
        // p99.9 of these 1,000 samples is the 999th (nearest rank): 90 ms and 100 ms are the
        // slowest; the fast ones must not count.
        var samples = (0..<998).map { _ in ModeRun.Sample(time: 0, latency: 1_000_000, cpuWait: 1_000_000, onCPU: 0) }
        samples.append(ModeRun.Sample(time: 0, latency: 90_000_000, cpuWait: 60_000_000, onCPU: 10_000_000))
        samples.append(ModeRun.Sample(time: 0, latency: 100_000_000, cpuWait: 0, onCPU: 28_000_000))
        let shares = ModeReport.shares(samples, atOrAbove: Percentiles.summary(samples.map(\.latency)).p999)
        let expected = (onCPU: 38.0 / 190, waiting: 60.0 / 190, elsewhere: 92.0 / 190)
        #expect(abs((shares?.onCPU ?? 0) - expected.onCPU) < 1e-9)
        #expect(abs((shares?.waitingForCPU ?? 0) - expected.waiting) < 1e-9)
        #expect(abs((shares?.elsewhere ?? 0) - expected.elsewhere) < 1e-9)
        // Two clocks read apart from the latency's: the wait is capped by what the CPU time
        // leaves, so the shares never add up to more than 1.
        let overlapping = [ModeRun.Sample(time: 0, latency: 10_000_000, cpuWait: 5_000_000, onCPU: 8_000_000)]
        let capped = ModeReport.shares(overlapping, atOrAbove: 0)
        #expect(capped?.onCPU == 0.8 && abs((capped?.waitingForCPU ?? 0) - 0.2) < 1e-9 && capped?.elsewhere == 0)
    }

    /// A run whose waits were not counted reports no shares rather than false ones.
    @Test func uncountedWaitsGiveNoShares() {
        let plan = RunPlan(streams: 1, bitrate: 8, fps: 25, sizes: FrameSizes(sizes: [1]), scratchDirectory: "/tmp")
        var run = ModeRun(mode: .pool, engine: "e", accounting: FrameAccounting(interval: 1, inputQueueFrames: 1), bytes: 1,
                          seconds: 1, cpuSeconds: 0, samples: [ModeRun.Sample(time: 0, latency: 5, cpuWait: 0, onCPU: 5)],
                          completionLatency: LatencySummary(p50: 0, p99: 0, p999: 0, max: 0))
        #expect(BenchReport(plan: plan, runs: [run], repeatCount: 1, noise: "none", frameTrace: nil)
            .modes["pool"]?.slowestAppends == nil)
        run.cpuWaitCounted = true
        #expect(BenchReport(plan: plan, runs: [run], repeatCount: 1, noise: "none", frameTrace: nil)
            .modes["pool"]?.slowestAppends?.onCPU == 1)
    }

    /// The mount's hand-overs that were neither on a CPU nor waiting for one are the writer
    /// waiting for the daemon: its line points at the script that splits them, the pool's not.
    @Test func theMountsLineSaysWhereItsRestIsSplit() {
        let plan = RunPlan(streams: 1, bitrate: 8, fps: 25, sizes: FrameSizes(sizes: [1]), scratchDirectory: "/tmp")
        let runs = [BenchMode.pool, .mount].map { mode in
            var run = ModeRun(mode: mode, engine: "e", accounting: FrameAccounting(interval: 1, inputQueueFrames: 1), bytes: 1,
                              seconds: 1, cpuSeconds: 0, samples: [ModeRun.Sample(time: 0, latency: 10, cpuWait: 2, onCPU: 3)],
                              completionLatency: LatencySummary(p50: 0, p99: 0, p999: 0, max: 0))
            run.cpuWaitCounted = true
            return run
        }
        let lines = BenchReport(plan: plan, runs: runs, repeatCount: 1, noise: "none", frameTrace: nil).table
            .split(separator: "\n").map(String.init)
        #expect(lines.contains("pool: the slowest 0.1% of hand-overs spent 30% on a CPU, 20% waiting for one, 50% elsewhere "
                               + "(blocked, interrupts or steal)"), "\(lines)")
        #expect(lines.contains("mount: the slowest 0.1% of hand-overs spent 30% on a CPU, 20% waiting for one, 50% elsewhere "
                               + "(blocked, interrupts or steal; through the mount, mostly waiting for the daemon's answer, "
                               + "which Tools/mount-bench/slow-requests.py splits)"), "\(lines)")
    }

    @Test func freePageReportingIsFeatureBitFive() {
        // This machine's balloon: STATS_VQ, DEFLATE_ON_OOM, REPORTING (bits 1, 2, 5).
        #expect(FreePageReporting.offersReporting("0110010100000000000000000000000010000000\n"))
        #expect(!FreePageReporting.offersReporting("0110000100000000000000000000000010000000\n"))
        #expect(!FreePageReporting.offersReporting("01100"))
    }

    /// A thread spinning among more spinners than there are CPUs waits for one part of the
    /// time: the wait read through `/proc/thread-self/schedstat` is more than 0 and, with its
    /// CPU time (`ThreadCPUTime`), no more than the time that passed.
    @Test(.enabled(if: TestSupport.isRoot, "needs root: turns kernel.task_delayacct on for the test"))
    func runQueueDelayCountsTheWaitForACPU() throws {
        let accounting = SchedulerDelayAccounting()
        defer { accounting.restore() }
        #expect(SchedulerDelayAccounting.isOn)
        let stop = Atomic<Bool>(false)
        let spinners = (0..<ProcessInfo.processInfo.activeProcessorCount + 1).map { _ in
            Thread { while !stop.load(ordering: .relaxed) {} }
        }
        spinners.forEach { $0.start() }
        defer { stop.store(true, ordering: .relaxed) }
        let result = Mutex<(waited: UInt64, ran: UInt64, elapsed: UInt64)?>(nil)
        let thread = Thread {
            guard let delay = RunQueueDelay() else { return }
            // The clock brackets the counters: read first, before them, and last, after them. A
            // wait between the counters' last read and the clock's (a preemption under load) was
            // counted as waited but not as elapsed, and broke the bound by 6 ms in a stress run.
            let started = MonotonicClock.nanoseconds()
            let (waited, ran) = (delay.nanoseconds(), ThreadCPUTime.nanoseconds())
            while MonotonicClock.nanoseconds() - started < 300_000_000 {}
            let (waitedEnd, ranEnd) = (delay.nanoseconds(), ThreadCPUTime.nanoseconds())
            let elapsed = MonotonicClock.nanoseconds() - started
            result.withLock { $0 = (waitedEnd - waited, ranEnd - ran, elapsed) }
        }
        thread.start()
        let deadline = Date().addingTimeInterval(10)
        while result.withLock({ $0 }) == nil && Date() < deadline { usleep(10_000) }
        let measured = try #require(result.withLock { $0 }, "RunQueueDelay() was nil with accounting on")
        #expect(measured.waited > 0, "\(measured)")
        #expect(measured.waited + measured.ran <= measured.elapsed + 5_000_000, "\(measured)")
    }

    @Test(.enabled(if: TestSupport.isRoot, "needs root (or RLIMIT_RTPRIO) for SCHED_FIFO"))
    func realtimePriorityPutsTheThreadUnderFIFO() throws {
        let seen = Mutex<(policy: Int32, priority: Int32)?>(nil)
        let thread = Thread {
            try? RealtimePriority.apply(7)
            var policy: Int32 = 0
            var parameter = sched_param()
            pthread_getschedparam(pthread_self(), &policy, &parameter)
            seen.withLock { $0 = (policy, parameter.sched_priority) }
        }
        thread.start()
        let deadline = Date().addingTimeInterval(10)
        while seen.withLock({ $0 }) == nil && Date() < deadline { usleep(10_000) }
        let result = try #require(seen.withLock { $0 })
        #expect(result.policy == Int32(SCHED_FIFO) && result.priority == 7)
    }

    /// The probe `size` uses for its default: true where the process may, and the caller's own
    /// policy untouched.
    @Test(.enabled(if: TestSupport.isRoot, "needs root (or RLIMIT_RTPRIO) for SCHED_FIFO"))
    func realtimeProbeLeavesTheCallerAlone() throws {
        #expect(RealtimePriority.isPermitted(50))
        var policy: Int32 = -1
        var parameter = sched_param()
        pthread_getschedparam(pthread_self(), &policy, &parameter)
        #expect(policy == Int32(SCHED_OTHER) && parameter.sched_priority == 0)
    }

    @Test func realtimePriorityOutOfRangeIsAUsageError() throws {
        let result = try TestSupport.run("provideo-bench", ["--fps", "25", "--duration", "1", "--bitrate", "10M", "--realtime", "0"])
        #expect(result.status == 2)
        #expect(result.stderr.hasPrefix("provideo-bench: --realtime is a SCHED_FIFO priority from 1 to 99, not 0"), "\(result.stderr)")
    }
}

/// `Tools/copy-stall`, the C program that separates the machine's copy stalls from the engine:
/// built with the system's compiler and run briefly.
@Suite struct CopyStallToolTests {
    static let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Tools/copy-stall/copy-stall.c").path

    @Test func reportsEachThreadsCopyTimes() throws {
        try TestSupport.withScratch { scratch in
        _ = try TestSupport.shell("cc -Wall -Wextra -Werror -O2 -pthread -o \(scratch)/copy-stall \(Self.source)")
        // 1 s, 2 threads, 1 MiB frames at 50 fps: 50 copies each.
        let result = try TestSupport.run("\(scratch)/copy-stall", ["1", "2", "1", "50"])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 2, "\(result.stdout)")
        for (index, line) in lines.enumerated() {
            let pattern = #"^thread \#(index): 50 copies, p50 [0-9.]+ p99 [0-9.]+ p99\.9 [0-9.]+ max [0-9.]+ ms, [0-9]+ over 4 ms$"#
            #expect(line.range(of: pattern, options: .regularExpression) != nil, "\(line)")
        }
        let bad = try TestSupport.run("\(scratch)/copy-stall", ["1", "0"])
        #expect(bad.status == 2 && bad.stderr.hasPrefix("copy-stall: bad argument '0'"), "\(bad.stderr)")
        }
    }
}

import Foundation
import Glibc
import TestSupport
import Testing
@testable import ProVideoStorage

/// `Pool.statusUpdates()` watching a capture that another process makes.
@Suite(.serialized) struct StatusUpdatesTests {
    /// A `provideo record` child fed 20 MB/s through a pipe for 3 s: this process's stream
    /// yields at least one status per second while the child writes, with the remaining
    /// capacity falling, and one for each busy-reason change: idle, `capturing`, idle. The
    /// second is the stream's cadence (a look every 500 ms, 50 ms of coalescing, the child's
    /// progress) plus what this machine took to wake a thread in the same run, measured beside
    /// it: on a busy machine one gap was 1.28 s.
    @Test func updatesFromACaptureInAnotherProcess() async throws {
        let scratch = TestSupport.scratchDirectory("status-updates")
        defer { TestSupport.removeTree(scratch) }
        let poolPath = scratch + "/pool"
        try #require(FS.provideo(poolPath, "create", "--capacity", "128M").status == 0)
        defer { FS.destroyQuietly(poolPath) }
        let pool = try Pool.open(at: poolPath)
        let log = StatusLog()
        let observer = log.follow(pool, seconds: 300) { seen in
            seen.contains { !$0.captures.isEmpty } && seen.last?.busyReasons.isEmpty == true
        }
        await log.waitFor(count: 1)

        let probe = SchedulingProbe()
        defer { probe.stop() }
        let recorder = try MultiChannelRecordTests.Recorder(poolPath, scratch + "/take.mov")
        let input = TestSupport.pattern(60 << 20, seed: 9)
        // Fed from a thread of its own, so the child writes steadily however busy the
        // cooperative pool is.
        let fed = DispatchSemaphore(value: 0)
        Thread {
            for offset in stride(from: 0, to: input.count, by: 1 << 20) {
                recorder.write(input[offset..<min(offset + (1 << 20), input.count)])
                usleep(50_000)
            }
            fed.signal()
        }.start()
        while fed.wait(timeout: .now()) == .timedOut { try await Task.sleep(for: .milliseconds(50)) }
        #expect(recorder.finish() == 0, "\(recorder.stderr)")
        await observer.value
        let lateness = probe.stop()

        #expect(TestSupport.fileEquals(scratch + "/take.mov", input))
        #expect(log.busyReasonChanges == [[], ["capturing"], []], "\(log.busyReasonChanges)")
        let statuses = log.statuses, times = log.times
        let capturing = statuses.indices.filter { !statuses[$0].captures.isEmpty }
        let first = try #require(capturing.first), last = try #require(capturing.last)
        let gaps = zip(times[first...last].dropFirst(), times[first...last]).map { $0 - $1 }
        // A gap holds up to three wake-ups of this process (the stream's wait, its coalescing
        // sleep, the follower's task): each may come as late as the probe's worst.
        let allowed = 1.0 + 3 * lateness
        let why = "an update came \(gaps.max() ?? 0) s after the one before, more than \(allowed) s "
            + "(1 s and three times the worst wake-up lateness: \(probe.summary))"
        #expect((gaps.max() ?? 0) <= allowed, "\(why)")
        #expect(times[last] - times[first] >= 2, "the capture was seen for \(times[last] - times[first]) s")
        let written = capturing.map { statuses[$0].captures.first?.bytesWritten ?? 0 }
        #expect(written == written.sorted() && Set(written).count >= 3, "bytes written seen: \(written)")
        let remaining = capturing.map { statuses[$0].remainingCapacity }
        #expect(remaining == remaining.sorted(by: >), "the capacity rose while capturing: \(remaining)")
        try FileManager.default.removeItem(atPath: scratch + "/take.mov")
    }
}

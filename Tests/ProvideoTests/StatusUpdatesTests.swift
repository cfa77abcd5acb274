import Foundation
import Glibc
import TestSupport
import Testing
@testable import ProVideoStorage

/// `Pool.statusUpdates()` watching a capture that another process makes.
@Suite(.serialized) struct StatusUpdatesTests {
    /// A `provideo record` child fed 20 MB/s through a pipe for 3 s: this process's stream
    /// yields each progress figure the child publishes within a second of a look seeing it,
    /// with the remaining capacity falling, and one status for each busy-reason change: idle,
    /// `capturing`, idle. The second is the stream's cadence (a look every 500 ms, 50 ms of
    /// coalescing) plus what this machine took in the same run, measured beside it: to wake a
    /// thread, and to answer one status look (its reads of the pool's files). Only figures
    /// published while the pipe took bytes count: the finish after it (the final fdatasync,
    /// the journal's and directories' syncs) changes nothing a status shows for as long as the
    /// disk takes (37 s once in CI, beside a test writing 4 GiB), and the stream yields only
    /// changes.
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
        // The slowest status look this machine answers meanwhile, timed from a thread of its own,
        // and when each of the child's progress figures became visible to such a look.
        let looking = Shared(true), slowestLook = Shared<UInt64>(0)
        let published = Shared<[(at: Double, bytes: Int64)]>([])
        let looker = Thread {
            while looking.current {
                let started = MonotonicTime.now()
                let bytes = (try? pool.status())?.captures.first?.bytesWritten
                let took = MonotonicTime.now() - started
                slowestLook.update { $0 = max($0, took) }
                if let bytes, bytes != published.current.last?.bytes { published.update { $0.append((StatusLog.now, bytes)) } }
                usleep(100_000)
            }
        }
        looker.start()
        let recorder = try MultiChannelRecordTests.Recorder(poolPath, scratch + "/take.mov")
        let input = TestSupport.pattern(60 << 20, seed: 9)
        // Fed from a thread of its own, so the child writes steadily however busy the
        // cooperative pool is.
        let fed = DispatchSemaphore(value: 0), fedAt = Shared<Double>(0)
        Thread {
            for offset in stride(from: 0, to: input.count, by: 1 << 20) {
                recorder.write(input[offset..<min(offset + (1 << 20), input.count)])
                fedAt.update { $0 = StatusLog.now }
                usleep(50_000)
            }
            fed.signal()
        }.start()
        while fed.wait(timeout: .now()) == .timedOut { try await Task.sleep(for: .milliseconds(50)) }
        #expect(recorder.finish() == 0, "\(recorder.stderr)")
        await observer.value
        let lateness = probe.stop()
        looking.update { $0 = false }
        let look = Double(slowestLook.current) / 1e9

        #expect(TestSupport.fileEquals(scratch + "/take.mov", input))
        #expect(log.busyReasonChanges == [[], ["capturing"], []], "\(log.busyReasonChanges)")
        let statuses = log.statuses, times = log.times
        let capturing = statuses.indices.filter { !statuses[$0].captures.isEmpty }
        let first = try #require(capturing.first), last = try #require(capturing.last)
        // Each progress figure the child published while it was fed, from when a look saw it to
        // when the stream yielded it (or a later one). The child's own cadence (its progress
        // every 250 ms, its writes, its share of a loaded CPU) is not the stream's: measured
        // from the stream's previous yield instead, a starved child made a gap of 1.46 s.
        let changes = published.current.filter { $0.at <= fedAt.current }
        let delays = changes.map { change -> Double in
            let yielded = capturing.first { (statuses[$0].captures.first?.bytesWritten ?? 0) >= change.bytes }
            return yielded.map { times[$0] - change.at } ?? .infinity
        }
        // A delay holds up to three wake-ups of this process (the stream's wait, its coalescing
        // sleep, the follower's task), each as late as the probe's worst, and two looks, each as
        // slow as the slowest timed beside it, after the stream's cadence (a look at least every
        // 500 ms, 50 ms of coalescing), within 1 s.
        let allowed = 1.0 + 3 * lateness + 2 * look
        let why = "a progress figure came \(delays.max() ?? 0) s after a look saw it, more than \(allowed) s "
            + "(1 s, three times the worst wake-up lateness: \(probe.summary), and twice the slowest look, \(look) s); "
            + "delays, s: \(delays.map { $0.formatted(.number.precision(.fractionLength(2))) })"
        #expect(changes.count >= 3, "the looks saw \(changes.count) progress figures while the child was fed")
        #expect((delays.max() ?? 0) <= allowed, "\(why)")
        #expect(times[last] - times[first] >= 2, "the capture was seen for \(times[last] - times[first]) s")
        let written = capturing.map { statuses[$0].captures.first?.bytesWritten ?? 0 }
        #expect(written == written.sorted() && Set(written).count >= 3, "bytes written seen: \(written)")
        let remaining = capturing.map { statuses[$0].remainingCapacity }
        #expect(remaining == remaining.sorted(by: >), "the capacity rose while capturing: \(remaining)")
        try FileManager.default.removeItem(atPath: scratch + "/take.mov")
    }
}

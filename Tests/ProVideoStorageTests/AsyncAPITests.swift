import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing
@testable import ProVideoStorage

/// The async API: a recorder written with tasks, status updates as a stream, and cancellation
/// of the long operations at their safe points.
@Suite struct AsyncAPITests {
    static let options = CaptureOptions(bitrate: 40_000_000, bufferBudget: 2 << 20, writeSize: 256 << 10,
                                        durabilityInterval: 100_000_000, grantSize: 1 << 20)

    /// A small async recorder: one task owns the capture (handed to it, as the compiler
    /// checks) and appends and finishes; another observes `statusUpdates()`. The observer saw
    /// the idle pool, then `capturing` with the remaining capacity falling until the finish,
    /// never above the last figure before it during the finish (whose give-back of the unused
    /// grant reads a step short between the file's cut and the reserve's growth: a stress run
    /// saw it rise 324 KiB back), then the idle pool again with the capacity the recording left.
    @Test func asyncRecorderWithStatusObserver() async throws {
        let scratch = TestSupport.scratchDirectory("async-recorder")
        defer { TestSupport.removeTree(scratch) }
        let pool = try await Pool.create(at: scratch + "/pool", capacity: 32 << 20, measuringBandwidth: false)
        let initial = try pool.remainingCapacity
        let log = StatusLog()
        // Done once idle again with the capacity the finish left (its last 1 MiB goes back to
        // the reserve after the capture's files are gone).
        let observer = log.follow(pool, seconds: 300) { seen in
            seen.contains { !$0.captures.isEmpty } && seen.last?.captures.isEmpty == true
                && seen.last?.busyReasons.isEmpty == true && seen.last?.remainingCapacity == (try? pool.remainingCapacity)
        }
        await log.waitFor(count: 1)

        let frames = TestSupport.frames(count: 48, size: 250_000, seed: 17)
        // When the recorder called finish, on the clock of the log's times.
        let finishingAt = Mutex<Double>(.infinity)
        let capture = try pool.startCapture(to: scratch + "/take.mov", options: Self.options)
        // On a thread of its own, as the observer: on Swift's cooperative pool (two threads on
        // two cores) the suite's synchronous tests can hold this recorder past the observer's
        // 300 s (a CI run: the test took 555 s, and the observer stopped while it captured).
        let recorder = Task(executorPreference: ThreadExecutor.shared) {
            for frame in frames {
                try capture.append(frame)
                try capture.poll()
                try await Task.sleep(for: .milliseconds(40))
            }
            finishingAt.withLock { $0 = StatusLog.now }
            return try await capture.finish()
        }
        let result = try await recorder.value
        await observer.value

        #expect(result.length == 48 * 250_000)
        #expect(TestSupport.fileEquals(scratch + "/take.mov", TestSupport.concatenated(frames)))
        #expect(log.busyReasonChanges == [[], ["capturing"], []], "\(log.busyReasonChanges)")
        let statuses = log.statuses
        #expect(statuses.first?.remainingCapacity == initial)
        let finishing = finishingAt.withLock { $0 }
        let capturing = zip(log.times, statuses).filter { !$0.1.captures.isEmpty }
        let whileCapturing = capturing.map(\.1.remainingCapacity)
        let beforeFinish = capturing.filter { $0.0 < finishing }.map(\.1.remainingCapacity)
        let duringFinish = capturing.filter { $0.0 >= finishing }.map(\.1.remainingCapacity)
        #expect(Set(whileCapturing).count >= 3, "the capacity was seen at \(whileCapturing)")
        #expect(beforeFinish == beforeFinish.sorted(by: >), "the capacity rose while capturing: \(beforeFinish)")
        #expect(duringFinish.allSatisfy { $0 <= beforeFinish.last ?? initial },
                "the capacity read over the last figure before the finish during it: \(beforeFinish.suffix(3)), \(duringFinish)")
        #expect(statuses.last?.remainingCapacity == (try pool.remainingCapacity))
        #expect(try pool.remainingCapacity <= initial - result.length)
        #expect(try pool.check() == [])
        try pool.destroyAfterRemoving(scratch + "/take.mov")
    }

    /// A copy-finish (the rename out of the pool answers EXDEV) cancelled while it copies:
    /// nothing is left in the destination's directory, the recording is held in the pool and
    /// placeable, the pool passes `check`; the held recording then moves out whole.
    @Test func cancelledCopyFinishLeavesNothingAtTheDestination() async throws {
        let scratch = TestSupport.scratchDirectory("cancel-copy")
        defer { TestSupport.removeTree(scratch) }
        let poolPath = scratch + "/pool"
        let outside = scratch + "/out"
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: false)
        let canceller = Canceller()
        let pool = try await Pool.create(at: poolPath, capacity: 32 << 20, measuringBandwidth: false, progress: nil,
                                         systemCalls: Self.copyOutOfCaptures(poolPath, cancellingAt: 1 << 20, with: canceller))
        let frames = TestSupport.frames(count: 32, size: 250_000, seed: 23)
        let capture = try pool.startCapture(to: outside + "/take.mov", options: Self.options)
        for frame in frames { try capture.append(frame) }
        let copied = ProgressLog()
        let finishing = Task { try await capture.finish(progress: { done, _ in copied.record(done) }) }
        canceller.set { finishing.cancel() }
        let outcome = await finishing.result
        #expect(copied.latest >= 1 << 20 && copied.latest < 8_000_000, "the copy reported \(copied.latest) bytes")

        guard case .failure(let error as ProVideoError) = outcome else {
            Issue.record("the cancelled finish ended with \(outcome)")
            return
        }
        #expect(error.code == .cancelled, "\(error)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside) == [])
        let held = try pool.listing().recordings
        #expect(held.count == 1)
        #expect(held.first?.path == error.path)
        #expect(try pool.check() == [])
        #expect(try pool.busyReasons.isEmpty)

        let moved = try await pool.moveHeldRecording(try #require(held.first).path)
        #expect(moved == outside + "/take.mov")
        #expect(TestSupport.fileEquals(moved, TestSupport.concatenated(frames)))
        #expect(try pool.listing().recordings.isEmpty)
        #expect(try pool.check() == [])
    }

    /// A replenish whose task is cancelled before it starts does nothing and says so; one that
    /// runs restores the reserve and returns the bytes it added (Apple's `Int`); a second one
    /// adds nothing; a cancellation that races a running one leaves a consistent pool.
    @Test func replenishCancelledBeforeItStartsAndReplenishThatRuns() async throws {
        let scratch = TestSupport.scratchDirectory("cancel-replenish")
        defer { TestSupport.removeTree(scratch) }
        let pool = try await Pool.create(at: scratch + "/pool", capacity: 16 << 20, measuringBandwidth: false)
        let capture = try pool.startCapture(to: scratch + "/take.mov", options: Self.options)
        for frame in TestSupport.frames(count: 8, size: 250_000, seed: 5) { try capture.append(frame) }
        try await capture.finish()
        let remaining = try pool.remainingCapacity
        #expect(remaining < 16 << 20)

        let cancelled = Task { () async throws -> Int in
            while !Task.isCancelled { await Task.yield() }
            return try await pool.replenishCapacity()
        }
        cancelled.cancel()
        await #expect(throws: ProVideoError.self) { try await cancelled.value }
        #expect(try pool.remainingCapacity == remaining, "a cancelled replenish changed the reserve")

        let racing = Task { try await pool.replenishCapacity() }
        racing.cancel()
        let raced = await racing.result
        #expect(try pool.check() == [])
        #expect(try pool.busyReasons.isEmpty)
        if let first = try? raced.get() { #expect(first == 16 << 20, "a replenish that ran returns the new size") }
        // As Apple's: the remaining capacity after it, not the bytes it added.
        #expect(try await pool.replenishCapacity() == 16 << 20)
        #expect(try pool.remainingCapacity == 16 << 20)
        #expect(try await pool.replenishCapacity() == 16 << 20)
        try pool.destroyAfterRemoving(scratch + "/take.mov")
    }

    /// Cancelling a zero-filling create midway (its progress handler cancels the task after
    /// the first 8 MiB) leaves no pool behind.
    /// A recovery asked for while another process changes the pool (it holds the mutation
    /// lock, as a move's copy or a resize does) waits for it, then salvages: before, it skipped
    /// the salvage and answered an empty recovery, "nothing to recover", with a dead recorder's
    /// take in the pool. The lock is released only once the salvage has been running for
    /// 300 ms without returning (a sleep, so at least that), which proves it waited.
    @Test func aRecoveryWaitsForAChangeOfThePoolInProgress() throws {
        try TestSupport.withScratch("recover-waits") { scratch in
            let path = scratch + "/pool"
            try CrashKit.createPool(path, capacity: "16M")
            defer { FS.destroyQuietly(path) }
            let input = TestSupport.pattern(1 << 20, seed: 5)
            try CrashKit.killRecorderAfterCommit(path, scratch + "/take.mov", input)
            // Another lock file description of the pool's lock, as another process's.
            let holder = Shared(try PoolLock(path: path + "/pool.lock", access: try Pool.open(at: path, salvaging: false).access))
            let state = Shared((started: false, result: Result<PoolRecovery, Error>?.none, returnedInTheHold: false))
            let held = Shared(false)
            let holding = Thread {
                _ = try? holder.current.withMutation {
                    held.update { $0 = true }
                    while !state.current.started { usleep(1_000) }
                    TestSupport.sleep(nanoseconds: 300_000_000)
                    state.update { $0.returnedInTheHold = $0.result != nil }
                }
            }
            holding.start()
            while !held.current { usleep(1_000) }
            state.update { $0.started = true }
            let recovery = Result { try Pool.salvage(at: path) }
            state.update { $0.result = recovery }
            #expect(!state.current.returnedInTheHold, "the recovery returned while the pool was being changed")
            let salvaged = try recovery.get().salvaged
            #expect(salvaged.map(\.path) == [scratch + "/take.mov"] && salvaged.first?.length == Int64(input.count),
                    "salvaged: \(salvaged)")
            #expect(TestSupport.fileEquals(scratch + "/take.mov", input))
        }
    }

    /// `recover(at:)` (async) and `salvage(at:)` (sync) return what they salvaged as a value (issue 26): a capture
    /// dropped with committed bytes is salvaged to its destination, and the result names it.
    @Test func recoverReturnsWhatItSalvaged() async throws {
        let scratch = TestSupport.scratchDirectory("async-recover")
        defer { TestSupport.removeTree(scratch) }
        let pool = try await Pool.create(at: scratch + "/pool", capacity: 16 << 20, measuringBandwidth: false)
        var options = Self.options
        options.durabilityInterval = 0
        for (index, recoverAsync) in [false, true].enumerated() {
            var capture: Capture? = try pool.startCapture(to: scratch + "/dropped-\(index).mov", options: options)
            try capture!.append(TestSupport.pattern(300_000, seed: UInt64(index)))
            // Until it is committed (30 s guards a hang, it decides nothing: the commit's time
            // is the disk's).
            let deadline = MonotonicTime.now() + 30_000_000_000
            while capture!.committedLength < 300_000, MonotonicTime.now() < deadline {
                try capture!.poll()
                usleep(2_000)
            }
            try #require(capture!.committedLength == 300_000, "the take was never committed")
            capture = nil  // the recorder is gone: its capture waits to be salvaged
            let recovery = recoverAsync ? try await Pool.recover(at: pool.path) : try Pool.salvage(at: pool.path)
            #expect(recovery.salvaged.map(\.path) == [scratch + "/dropped-\(index).mov"])
            #expect(recovery.salvaged.first?.length == 300_000)
            #expect(recovery.discarded.isEmpty && recovery.unsalvageable.isEmpty && recovery.repairFailure == nil)
            #expect(try recovery.pool.busyReasons.isEmpty)
        }
        try pool.destroyAfterRemoving(scratch + "/dropped-0.mov")
    }

    @Test func cancelledZeroFillLeavesNoPool() async throws {
        let scratch = TestSupport.scratchDirectory("cancel-create")
        defer { TestSupport.removeTree(scratch) }
        let filled = ProgressLog()
        let canceller = Canceller()
        let creating = Task {
            try await Pool.create(at: scratch + "/pool", capacity: 64 << 20, zeroFill: true, measuringBandwidth: false) { done, _ in
                filled.record(done)
                if done == 8 << 20 { canceller.cancel() }
            }
        }
        canceller.set { creating.cancel() }
        let error = await #expect(throws: ProVideoError.self) { try await creating.value }
        #expect(error?.code == .cancelled)
        #expect(filled.latest < 64 << 20)
        #expect(!FileManager.default.fileExists(atPath: scratch + "/pool"))
    }

    /// One `Pool` shared by five tasks: four start, record and finish a capture each, at once,
    /// while the fifth replenishes. Every recording is whole and the pool passes `check`: the
    /// pool's locks exclude this process's threads as they exclude other processes.
    @Test func onePoolSharedByConcurrentTasks() async throws {
        let scratch = TestSupport.scratchDirectory("shared-pool")
        defer { TestSupport.removeTree(scratch) }
        let pool = try await Pool.create(at: scratch + "/pool", capacity: 48 << 20, measuringBandwidth: false)
        let takes = (0..<4).map { TestSupport.frames(count: 16, size: 200_000, seed: UInt64(40 + $0)) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, frames) in takes.enumerated() {
                group.addTask {
                    let capture = try pool.startCapture(to: scratch + "/take-\(index).mov", options: Self.options)
                    for frame in frames {
                        try capture.append(frame)
                        await Task.yield()
                    }
                    try await capture.finish()
                }
            }
            group.addTask {
                for _ in 0..<4 { _ = try await pool.replenishCapacity() }
            }
            try await group.waitForAll()
        }
        for (index, frames) in takes.enumerated() {
            #expect(TestSupport.fileEquals(scratch + "/take-\(index).mov", TestSupport.concatenated(frames)))
        }
        #expect(try pool.check() == [])
        #expect(try pool.busyReasons.isEmpty)
    }

    /// The stream sees a resize (`pool.json` replaced, the reserve grown) and ends by itself
    /// when the pool is destroyed.
    @Test func statusUpdatesSeeAResizeAndEndWithThePool() async throws {
        let scratch = TestSupport.scratchDirectory("status-resize")
        defer { TestSupport.removeTree(scratch) }
        let pool = try await Pool.create(at: scratch + "/pool", capacity: 8 << 20, measuringBandwidth: false)
        let log = StatusLog()
        let observer = log.follow(pool, seconds: 30) { _ in false }
        await log.waitFor(count: 1)
        let resized = try await pool.resize(to: 12 << 20)
        await log.waitUntil { $0.last?.remainingCapacity == resized }
        let seen = log.statuses
        #expect(seen.first?.initialCapacity == 8 << 20)
        #expect(seen.last?.initialCapacity == resized && seen.last?.remainingCapacity == resized, "\(seen.count) statuses")
        try pool.destroy()
        let destroyedAt = StatusLog.now
        await observer.value
        let ended = try #require(log.endedAt)
        #expect(ended - destroyedAt < 2, "the stream outlived the pool by \(ended - destroyedAt) s")
    }

    /// The pool's mutation and reserve locks exclude threads of one process sharing a `Pool`
    /// (one open file description, which OFD locks never exclude from itself): a second
    /// thread enters only after the first left, and `withMutationIfFree` declines meanwhile.
    @Test func poolLocksExcludeThreadsOfOneProcess() async throws {
        let scratch = TestSupport.scratchDirectory("lock-threads")
        defer { TestSupport.removeTree(scratch) }
        let pool = try await Pool.create(at: scratch + "/pool", capacity: 8 << 20, measuringBandwidth: false)
        for lockByte in ["mutation", "reserve"] {
            let order = Mutex<[String]>([])
            let holding = Mutex(false)
            let first = Thread {
                try? Self.take(lockByte, of: pool) {
                    holding.withLock { $0 = true }
                    usleep(200_000)
                    order.withLock { $0.append("first leaves") }
                }
            }
            first.start()
            while !holding.withLock({ $0 }) { usleep(1_000) }
            if lockByte == "mutation" { #expect(try pool.lock.withMutationIfFree { true } == nil) }
            try Self.take(lockByte, of: pool) { order.withLock { $0.append("second enters") } }
            #expect(order.withLock { $0 } == ["first leaves", "second enters"], "\(lockByte)")
        }
    }

    private static func take(_ lockByte: String, of pool: Pool, _ body: () -> Void) throws {
        if lockByte == "mutation" { try pool.lock.withMutation(body) } else { try pool.lock.withReserve(body) }
    }

    /// System calls whose rename out of `pool`'s captures answers EXDEV (as for a destination
    /// on another disk), and whose copy goes 256 KiB at a time and, on reaching `offset`,
    /// cancels the finishing task through `canceller`: the cancellation lands at a known point
    /// however late the test's own task runs.
    static func copyOutOfCaptures(_ pool: String, cancellingAt offset: Int64, with canceller: Canceller) -> SystemCalls {
        var calls = SystemCalls.live
        calls.renameNoReplace = { rawFrom, rawTo in
            let from = TestSupport.resolved(rawFrom)
            return from.hasPrefix(pool + "/captures/") ? -EXDEV : SystemCalls.live.renameNoReplace(rawFrom, rawTo)
        }
        calls.copyFileRange = { fdIn, offsetIn, fdOut, offsetOut, length in
            if offsetIn == offset { canceller.cancel() }
            return FaultCallLog.emulatedCopy(fdIn, offsetIn, fdOut, offsetOut, min(length, 256 << 10))
        }
        return calls
    }
}

/// Cancels a task from the thread of the operation it runs: `cancel()` waits until the test
/// has `set` how to cancel it.
final class Canceller: Sendable {
    private let action = Mutex<(@Sendable () -> Void)?>(nil)

    func set(_ cancel: @escaping @Sendable () -> Void) { action.withLock { $0 = cancel } }

    func cancel() {
        while true {
            if let cancel = action.withLock({ $0 }) { return cancel() }
            usleep(1_000)
        }
    }
}

/// The last byte count a progress handler reported.
final class ProgressLog: Sendable {
    private let done = Mutex<Int64>(0)
    func record(_ bytes: Int64) { done.withLock { $0 = max($0, bytes) } }
    var latest: Int64 { done.withLock { $0 } }
}

extension Pool {
    /// Removes a test's recording and destroys the pool.
    func destroyAfterRemoving(_ recording: String) throws {
        try FileManager.default.removeItem(atPath: recording)
        try destroy()
    }
}

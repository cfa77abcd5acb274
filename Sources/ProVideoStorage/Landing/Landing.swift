import FoundationEssentials
import Glibc
import Synchronization
import ProVideoSystem
import ProVideoJournal

/// What one landing attempt did.
package struct LandingResult: Codable, Sendable, Equatable {
    /// The recording in the pool.
    package var path: String
    package var destination: String
    package var length: Int64
    /// true when it was published at its destination and deleted from the pool.
    package var landed: Bool
    /// Why it did not land (it stays in the pool and is retried after a back-off).
    package var error: String?
    /// Set on a landed result when returning the landed takes' space to the reserve failed
    /// (not when the pool was busy, which leaves it to a later `land` or `replenish`): why,
    /// and that `provideo replenish` returns it. The take itself landed.
    package var reserveNotRefilled: String? = nil
}

/// Reports a landing's progress, on each transfer's thread: the take's destination, then its
/// step (`.copying`: bytes copied, from where a resumed transfer starts; `.verifying`: bytes read
/// back) with bytes done and the take's length, or a nil step once its attempt has ended
/// (landed, failed, stopped or left to another process).
package typealias LandingObserver = @Sendable (_ destination: String, _ step: OperationControl.Step?, _ done: Int64,
                                               _ total: Int64) -> Void

/// Landing: recordings whose destination is on another filesystem, kept durable in the pool at
/// `finish()` (`LandingMode.background`) and copied there by `provideo land` in the
/// background. They are held recordings (`recordings/`, note `landing: true`) with a progress
/// record (`LandingRecord`); see Docs/LANDING.md. A value handed what it needs of the pool
/// (`Pool.landing`): its layout, access rules and system calls, what it holds, and how it
/// gets landed takes' space back.
struct Landing {
    let layout: PoolLayout
    let access: PoolAccess
    let calls: SystemCalls
    /// The recordings the pool holds (`Pool.heldRecordings`).
    let held: () throws -> [HeldRecording]
    /// Returns landed takes' space to the reserve (`Pool.replenish`).
    let replenish: () throws -> Void

    /// The recordings waiting to land, in name order, with their progress.
    func progress() throws -> [LandingProgress] {
        try waiting().compactMap { held in
            let record = LandingRecord.load(forHeld: held.path)
            // A lander holds the take's first byte (`LandingTransfer`). A take that cannot be
            // opened or probed is neither transferring nor waiting as far as anyone knows.
            var transferring: Bool?, unknown: String?
            do {
                transferring = try FileDescriptor.open(held.path, O_RDONLY | O_NOFOLLOW).isLockedByOthers(0, 1)
            } catch let error as ProVideoError where error.errno == ENOENT {
                return nil  // landed since it was listed
            } catch {
                unknown = (error as? ProVideoError)?.message ?? "\(error)"
            }
            // The record's rate is range-checked (`LandingRecord.decode`); below a byte a second
            // (a chunk in 97 days) it is no rate a transfer sustained, and its time left no time.
            let rate = record.bytesPerSecond.flatMap { $0 >= 1 ? $0 : nil }
            let landed = min(record.landed, held.length)
            return LandingProgress(path: held.path, destination: held.destination, length: held.length,
                                   landedBytes: landed, transferring: transferring, transferringUnknown: unknown,
                                   bytesPerSecond: rate,
                                   etaSeconds: rate.map { Double(held.length - landed) / $0 },
                                   attempts: record.attempts, lastError: record.lastError,
                                   nextAttemptAt: record.nextAttemptAt)
        }
    }

    /// Lands the recordings waiting to land, `parallel` at a time, each on a thread at idle I/O
    /// and CPU priority (`IdlePriority`), then returns their space to the reserve (`replenish`, when the
    /// pool is not busy; a later `land` or `replenish` does it otherwise; a failure is named on
    /// each landed result, `reserveNotRefilled`).
    /// - Parameters:
    ///   - rate: a cap for each transfer, in bytes per second; nil for none.
    ///   - dueOnly: skip recordings whose back-off after a failure has not run out.
    ///   - retryAfter: the first back-off after a failure, in seconds; it doubles with each
    ///     failure, up to 5 minutes.
    ///   - shouldStop: checked between reads; true stops every transfer where it is (they resume
    ///     at the next landing).
    ///   - observer: gets each transfer's progress (`LandingObserver`).
    ///   - fleet: a budget shared with other servers' landers (`FleetSlots`): each transfer
    ///     first takes one of its slots, waiting (at idle priority, seen by `status` as
    ///     `landingWaitsForFleetSlot`) while every slot is held, and runs at its share of the
    ///     fleet's rate (beside `rate`, the lower of the two).
    /// - Returns: one result per recording tried; a recording another process is landing is
    ///   skipped. Unless `dueOnly`, also one failed result per held recording whose note
    ///   cannot be read (`HeldRecording.noteUnreadable`): it may be waiting to land, and "nothing
    ///   to land" would not be known.
    /// - Throws: what listing the recordings waiting to land throws; `.ioError` with
    ///   pthread_create(3)'s error when not one landing thread can be started.
    func land(parallel: Int = 1, rate: Int64? = nil, dueOnly: Bool = false, retryAfter: Double = 5,
              shouldStop: @escaping @Sendable () -> Bool = { false },
              observer: LandingObserver? = nil, fleet: FleetSlots? = nil) throws -> [LandingResult] {
        let now = Date().timeIntervalSince1970
        let due = try waiting().filter {
            !dueOnly || (LandingRecord.load(forHeld: $0.path).nextAttemptAt ?? 0) <= now
        }
        let (layout, access, calls) = (self.layout, self.access, self.calls)
        let next = Mutex(0)
        let results = Mutex<[LandingResult]>([])
        let cap: @Sendable () -> Int64? = {
            guard let share = fleet?.share() else { return rate }
            return rate.map { min($0, share) } ?? share
        }
        let work: @Sendable () -> Void = {
            while !shouldStop() {
                guard next.withLock({ $0 < due.count }) else { return }
                // The fleet's slot first, then the take: a server waiting for a slot holds no take
                // another of its threads could land.
                let slot: FleetSlots.Held?
                do {
                    slot = try fleet.flatMap { try Self.waitForSlot(of: $0, layout: layout, access: access, shouldStop: shouldStop) }
                } catch {
                    results.withLock { $0.append(LandingResult(path: "", destination: "", length: 0, landed: false,
                                                               error: Self.slotFailure(fleet, error))) }
                    return
                }
                if fleet != nil && slot == nil { return }
                let index = next.withLock { value -> Int in defer { value += 1 }; return value }
                guard index < due.count else { return }
                let held = due[index]
                var transfer = LandingTransfer(held: held, calls: calls, access: access, rate: cap,
                                               retryAfter: retryAfter, shouldStop: shouldStop)
                if let observer {
                    transfer.control = OperationControl(observer: { step, done, total in
                        observer(held.destination, step, done, total)
                    })
                }
                defer { observer?(held.destination, nil, 0, held.length) }
                var result = LandingResult(path: held.path, destination: held.destination, length: held.length,
                                           landed: false, error: nil)
                do {
                    _ = try withExtendedLifetime(slot) {
                        try transfer.run { try Self.forgetLanded(held, layout: layout, access: access, calls: calls) }
                    }
                    result.landed = true
                } catch is LandingTransfer.Stopped {
                    return
                } catch let error as ProVideoError where error.code == .busy {
                    continue
                } catch {
                    result.error = (error as? ProVideoError)?.message ?? "\(error)"
                }
                results.withLock { $0.append(result) }
            }
        }
        // Threads of their own, never the caller's: the idle priorities stay with them. Joined,
        // so none is still ending when the caller returns and the process exits (`JoinedThread`).
        // Fewer threads than asked for when the system has no more: the ones started land it all.
        var threads: [JoinedThread] = []
        for _ in 0..<max(min(parallel, due.count), 0) {
            do {
                threads.append(try JoinedThread(name: "provideo-land") {
                    try? IdlePriority.enter()
                    work()
                })
            } catch {
                if threads.isEmpty { throw error }
                break
            }
        }
        threads.forEach { $0.join() }
        var done = results.withLock { $0 }
        if done.contains(where: \.landed), let failure = Self.refillFailure(replenish) {
            for index in done.indices where done[index].landed { done[index].reserveNotRefilled = failure }
        }
        let unknown = dueOnly ? [] : try held().filter { $0.noteUnreadable == true }.map {
            LandingResult(path: $0.path, destination: $0.destination, length: $0.length, landed: false, error: $0.reason)
        }
        return done + unknown
    }

    /// Why returning landed takes' space to the reserve failed; nil when it was returned or
    /// when the pool was busy (`.busy`: a resize or another replenish runs, and the next
    /// `land` or `replenish` returns it).
    static func refillFailure(_ replenish: () throws -> Void) -> String? {
        do {
            try replenish()
            return nil
        } catch let error as ProVideoError where error.code == .busy {
            return nil
        } catch {
            return "its space was not returned to the reserve (\((error as? ProVideoError)?.message ?? "\(error)")): "
                + "a replenish returns it"
        }
    }

    /// Takes one of the fleet's slots, waiting while every slot is held: a second at a time, on
    /// the landing thread (at idle priority), with a shared lock on the pool lock file's
    /// fleet-wait byte (`PoolLock.fleetWaitByte`) so that `status` sees a lander waiting.
    /// - Returns: the slot; nil when `shouldStop` ended the wait.
    /// - Throws: the slots file's open or lock error; the pool lock file's open error.
    static func waitForSlot(of fleet: FleetSlots, layout: PoolLayout, access: PoolAccess,
                            shouldStop: @Sendable () -> Bool) throws -> FleetSlots.Held? {
        var marker: FileDescriptor?
        defer { withExtendedLifetime(marker) {} }
        while !shouldStop() {
            if let held = try fleet.tryAcquire() { return held }
            if marker == nil {
                let file = try access.openCreating(layout.lock, O_RDWR)
                _ = try file.lockShared(PoolLock.fleetWaitByte, 1)
                marker = file
            }
            for _ in 0..<10 where !shouldStop() { MonotonicTime.sleep(microseconds: 100_000) }
        }
        return nil
    }

    /// Why a lander could not take a fleet slot: nothing lands without one.
    static func slotFailure(_ fleet: FleetSlots?, _ error: Error) -> String {
        "no fleet slot could be taken in \(fleet?.file ?? "?") (\((error as? ProVideoError)?.message ?? "\(error)")): "
            + "nothing was landed, so the fleet's budget holds; check the shared store, then land again"
    }

    /// "; N take(s) waiting to land hold X, which landing returns" when takes still waiting to
    /// land hold space the reserve needs; "" otherwise (and when they cannot be listed: a hint,
    /// not a figure anything acts on).
    func hint() -> String {
        guard let takes = try? waiting(), !takes.isEmpty else { return "" }
        let bytes = takes.map(\.length).saturatingSum()
        return "; \(takes.count) take(s) waiting to land hold \(ByteFormat.human(bytes)), which landing returns"
    }

    /// The held recordings marked for landing whose file is there.
    /// - Throws: what `held` throws; statx's error for a recording that cannot be
    ///   looked at (`FileSystem.isPresent`).
    func waiting() throws -> [HeldRecording] {
        try held().filter { try $0.landing == true && FileSystem.isPresent($0.path) }
    }

    /// Deletes a landed recording's pool copy, note and record, under the pool's mutation lock:
    /// its space is the filesystem's again, for the reserve to take back.
    private static func forgetLanded(_ held: HeldRecording, layout: PoolLayout, access: PoolAccess,
                                     calls: SystemCalls) throws {
        try PoolLock(path: layout.lock, access: access).withMutation {
            for file in [held.path] + HeldRecording.companions(of: held.path) {
                try FileSystem.remove(file)
            }
            try FileSystem.syncDirectory(layout.recordings, calls)
        }
    }
}

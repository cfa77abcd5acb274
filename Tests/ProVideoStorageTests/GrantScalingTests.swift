import Foundation
import Glibc
import TestSupport
import Testing
@testable import ProVideoStorage

/// Grants scale with the number of streams (issue 44): no capture's grant waits behind another
/// capture's fallocate, behind its own or another's cut of the reserve, or behind a give-back.
/// Each test holds one step inside a system call until the step it must not wait for has
/// happened (or `holdLimit` passed), so what it proves does not depend on the machine's speed:
/// with a grant that waited, the hold runs out and the test says so.
@Suite struct GrantScalingTests {
    /// How long a held call waits for what it waits for, in nanoseconds.
    static let holdLimit: UInt64 = 20_000_000_000
    static let step: Int64 = 1 << 20

    /// Captures whose lead is two steps (`GrantLead`): at 1 Mbit/s four seconds of stream are
    /// less, so each test knows which grant comes when.
    static var options: CaptureOptions {
        var options = testOptions
        options.bitrate = 1_000_000
        options.overrunPolicy = .wait(nanoseconds: 30_000_000_000)
        options.grantSize = step
        return options
    }

    /// A capture started in `pool` whose start's grant has been cut from the reserve (its
    /// granter's cutter makes that cut after the start returns): the tests below hold or time
    /// the cuts of the grants that follow.
    static func started(_ pool: Pool, to destination: String) throws -> Capture {
        let capture = try pool.startCapture(to: destination, options: options)
        #expect(awaiting { !capture.granter.startCutPending }, "the start's grant was never cut")
        return capture
    }

    /// Waits until `condition` holds or `holdLimit` passed; returns whether it held.
    static func awaiting(_ condition: () -> Bool) -> Bool {
        let deadline = MonotonicTime.now() + holdLimit
        while !condition() {
            guard MonotonicTime.now() < deadline else { return false }
            usleep(1_000)
        }
        return true
    }

    /// Four captures' first grants after their start, each held inside its fallocate until all
    /// four are inside theirs at once: they were (a grant under one reserve lock for all
    /// captures, as before, let one in at a time), and every file is exact after.
    @Test(.timeLimit(.minutes(3)))
    func theCapturesGrantsRunAtOnce() throws {
        let count = 4
        // The capture files whose first grant after the start was held, those inside their
        // fallocate now, and the most that were inside at once.
        let state = Shared((held: Set<String>(), inside: 0, most: 0))
        var calls = SystemCalls.live
        calls.fallocate = { fd, keepSize, offset, length in
            let path = TestSupport.path(of: fd)
            let holding = offset > 0 && path.contains("/captures/") && state.update { state in
                guard state.held.count < count, state.held.insert(path).inserted else { return false }
                state.inside += 1
                state.most = max(state.most, state.inside)
                return true
            }
            guard holding else { return SystemCalls.live.fallocate(fd, keepSize, offset, length) }
            _ = Self.awaiting { state.current.most == count }
            let rc = SystemCalls.live.fallocate(fd, keepSize, offset, length)
            state.update { $0.inside -= 1 }
            return rc
        }
        try withPool(capacity: 32 << 20, calls: calls) { pool, scratch in
            let captures = try (0..<count).map { try pool.startCapture(to: scratch + "/iso-\($0).mov", options: Self.options) }
            var frames = [[UInt8]](repeating: [], count: count)
            // Two frames each: the second finds the lead below two steps, and every granter asks.
            for (index, capture) in captures.enumerated() {
                for seed in 0..<2 {
                    let frame = TestSupport.pattern(256 << 10, seed: UInt64(index * 10 + seed))
                    try capture.append(frame)
                    frames[index] += frame
                }
            }
            let landed = Self.awaiting { captures.allSatisfy { $0.granter.grantedBytes > 2 * Self.step } }
            let most = state.current.most
            #expect(most == count, "at most \(most) of \(count) captures' grants were in fallocate at once")
            #expect(landed, "not every capture's grant landed")
            for (index, capture) in captures.enumerated() {
                for seed in 2...7 {
                    let frame = TestSupport.pattern(256 << 10, seed: UInt64(index * 10 + seed))
                    try capture.append(frame)
                    frames[index] += frame
                }
            }
            for (index, capture) in captures.enumerated() {
                let result = try capture.finish()
                #expect(TestSupport.fileHolds(result.path, frames[index]), "iso-\(index) does not hold its frames")
            }
            #expect(try pool.check() == [])
        }
    }

    /// A capture's cut of the reserve, held inside its ftruncate, does not delay the
    /// capture's next grant: the grant after it landed while the cut was held (a cut made on
    /// the granter's thread, as before, held every later grant behind it), and the reserve and
    /// the capture's file add up to the pool's capacity once the cuts are made.
    @Test(.timeLimit(.minutes(3)))
    func aCutNeverDelaysTheNextGrant() throws {
        let capture = Shared<Capture?>(nil), cutHeld = Shared(false), grantedWhileHeld = Shared<Int64>(0)
        var calls = SystemCalls.live
        calls.ftruncate = { fd, length in
            if let running = capture.current, !cutHeld.current, TestSupport.path(of: fd).hasSuffix("/pool/reserve") {
                cutHeld.update { $0 = true }
                let before = running.granter.grantedBytes
                _ = Self.awaiting { running.granter.grantedBytes > before }
                grantedWhileHeld.update { $0 = running.granter.grantedBytes - before }
            }
            return SystemCalls.live.ftruncate(fd, length)
        }
        try withPool(capacity: 32 << 20, calls: calls) { pool, scratch in
            let started = try pool.startCapture(to: scratch + "/take.mov", options: Self.options)
            capture.update { $0 = started }
            var accepted: [UInt8] = []
            // Frames until a grant has landed while the cut was held: each append tells the
            // granter where the head is, and one beyond the granted bytes waits for the grant.
            for seed in 0..<40 where grantedWhileHeld.current == 0 {
                let frame = TestSupport.pattern(256 << 10, seed: UInt64(seed))
                try started.append(frame)
                accepted += frame
            }
            capture.update { $0 = nil }
            #expect(cutHeld.current, "no cut of the reserve after the start")
            #expect(grantedWhileHeld.current > 0, "no grant landed while the capture's cut was held")
            let result = try started.finish()
            #expect(TestSupport.fileHolds(result.path, accepted))
            #expect(try pool.check() == [])
        }
    }

    /// A capture's start makes no cut of the reserve itself: its grant's cut is its granter's
    /// cutter's, made after `startCapture` returned. With the first capture's start cut held
    /// inside its ftruncate until a second capture has started, the second started within the
    /// hold (a start that cut under the pool's mutation lock held every other start behind it:
    /// a take switch beside nine streams on a `discard` mount failed "another thread of this
    /// process has held the pool's lock for 30 s"), both takes hold their frames, and the pool
    /// is whole once the cuts are made.
    @Test(.timeLimit(.minutes(3)))
    func aStartsCutNeverDelaysAnotherStart() throws {
        let armed = Shared(true), holding = Shared(false), secondStarted = Shared(false), startedInTheHold = Shared<Bool?>(nil)
        var calls = SystemCalls.live
        calls.ftruncate = { fd, length in
            let hold = TestSupport.path(of: fd).hasSuffix("/pool/reserve") && armed.update { armed in
                defer { armed = false }
                return armed
            }
            if hold {
                holding.update { $0 = true }
                startedInTheHold.update { $0 = Self.awaiting { secondStarted.current } }
            }
            return SystemCalls.live.ftruncate(fd, length)
        }
        try withPool(capacity: 32 << 20, calls: calls) { pool, scratch in
            let first = try pool.startCapture(to: scratch + "/first.mov", options: Self.options)
            #expect(Self.awaiting { holding.current }, "the first start's grant was never cut")
            let second = try pool.startCapture(to: scratch + "/second.mov", options: Self.options)
            secondStarted.update { $0 = true }
            #expect(Self.awaiting { startedInTheHold.current != nil }, "the held cut never ended")
            #expect(startedInTheHold.current == true, "the second capture started only after the first's cut")
            let frames = [TestSupport.pattern(256 << 10, seed: 1), TestSupport.pattern(256 << 10, seed: 2)]
            try first.append(frames[0])
            try second.append(frames[1])
            #expect(TestSupport.fileHolds(try first.finish().path, frames[0]))
            #expect(TestSupport.fileHolds(try second.finish().path, frames[1]))
            #expect(try pool.check() == [])
            #expect(try pool.remainingCapacity == 32 << 20 - 2 * (256 << 10))
        }
    }

    /// A finished take's give-back, held inside its growth of the reserve, does not delay a
    /// running capture's grant: the running capture's grant landed while the give-back was
    /// held (a give-back holding the reserve lock, as before, held it until the hold ran out).
    @Test(.timeLimit(.minutes(3)))
    func aGiveBackNeverDelaysAGrant() throws {
        let running = Shared<Capture?>(nil), giveBackHeld = Shared(false), grantedWhileHeld = Shared<Int64>(0)
        var calls = SystemCalls.live
        calls.fallocate = { fd, keepSize, offset, length in
            if let capture = running.current, !giveBackHeld.current, TestSupport.path(of: fd).hasSuffix("/pool/reserve") {
                giveBackHeld.update { $0 = true }
                let before = capture.granter.grantedBytes
                _ = Self.awaiting { capture.granter.grantedBytes > before }
                grantedWhileHeld.update { $0 = capture.granter.grantedBytes - before }
            }
            return SystemCalls.live.fallocate(fd, keepSize, offset, length)
        }
        try withPool(capacity: 32 << 20, calls: calls) { pool, scratch in
            let ending = try pool.startCapture(to: scratch + "/ending.mov", options: Self.options)
            let kept = try pool.startCapture(to: scratch + "/kept.mov", options: Self.options)
            let endingFrame = TestSupport.pattern(256 << 10, seed: 1)
            try ending.append(endingFrame)
            running.update { $0 = kept }
            let finisher = Thread { _ = try? ending.cancel() }
            finisher.start()
            #expect(Self.awaiting { giveBackHeld.current }, "the cancel gave nothing back to the reserve")
            // The kept capture's lead falls below two steps: its granter asks while the give-back is held.
            var accepted: [UInt8] = []
            for seed in 0..<12 where grantedWhileHeld.current == 0 {
                let frame = TestSupport.pattern(256 << 10, seed: UInt64(10 + seed))
                try kept.append(frame)
                accepted += frame
            }
            _ = Self.awaiting { grantedWhileHeld.current > 0 }
            running.update { $0 = nil }
            _ = Self.awaiting { finisher.isFinished }
            #expect(grantedWhileHeld.current > 0, "the running capture's grant did not land while the give-back was held")
            let result = try kept.finish()
            #expect(TestSupport.fileHolds(result.path, accepted))
            #expect(try pool.check() == [])
        }
    }

    /// Another process's account counts a grant once at each of its steps: read through a
    /// second `Pool` while the capture's fallocate is held (claimed, the file not yet grown),
    /// just after it (the file grown, the claim standing) and while its cut is held (allocated,
    /// the reserve not yet cut), the reserve's own bytes and the captures' shares add up to
    /// the pool's capacity each time (a claim in flight not counted as its capture's made it
    /// short by the grant, and another process saw the capacity rise mid-capture).
    @Test(.timeLimit(.minutes(3)))
    func aGrantInFlightIsCountedOnceAtEachStep() throws {
        let reader = Shared<Pool?>(nil), sums = Shared<[String: Int64]>([:])
        // The first reading at each step; -1 for an account that could not be read.
        let record: @Sendable (String) -> Void = { step in
            guard let pool = reader.current, sums.current[step] == nil else { return }
            let sum = try? pool.lock.withReserve { () throws -> Int64 in
                let account = try pool.capacityAccount(pool.reserve(pool.layout.reserve))
                return account.ownReserve + (try account.held)
            }
            sums.update { $0[step] = sum ?? -1 }
        }
        var calls = SystemCalls.live
        calls.fallocate = { fd, keepSize, offset, length in
            let capturing = offset > 0 && TestSupport.path(of: fd).contains("/captures/")
            if capturing { record("claimed") }
            let rc = SystemCalls.live.fallocate(fd, keepSize, offset, length)
            if capturing { record("allocated") }
            return rc
        }
        calls.ftruncate = { fd, length in
            if TestSupport.path(of: fd).hasSuffix("/pool/reserve") { record("cutting") }
            return SystemCalls.live.ftruncate(fd, length)
        }
        try withPool(capacity: 32 << 20, calls: calls) { pool, scratch in
            let capture = try pool.startCapture(to: scratch + "/take.mov", options: Self.options)
            let second = try Pool.open(at: pool.path)
            reader.update { $0 = second }
            var accepted: [UInt8] = []
            for seed in 0..<12 where sums.current.count < 3 {
                let frame = TestSupport.pattern(256 << 10, seed: UInt64(seed))
                try capture.append(frame)
                accepted += frame
            }
            _ = Self.awaiting { sums.current.count == 3 }
            reader.update { $0 = nil }
            let capacity = try pool.initialCapacity
            #expect(sums.current == ["claimed": capacity, "allocated": capacity, "cutting": capacity],
                    "reserve + shares at each step, against \(capacity): \(sums.current)")
            let result = try capture.finish()
            #expect(TestSupport.fileHolds(result.path, accepted))
        }
    }

    /// Each grant is timed step by step, with its lead at landing (issue 44's table): a
    /// fallocate held 30 ms, a cut held 20 ms and a claim slot's pwrite held 10 ms show at least
    /// that (the pwrite in the claim's time holding the reserve lock); a grant asked for early
    /// lands with the lead the recorder had (1.625 steps of stream at the test's bitrate), one the
    /// recorder waited for is counted late with no lead, and every grant is counted once.
    @Test(.timeLimit(.minutes(3)))
    func eachGrantIsTimedStepByStep() throws {
        let armed = Shared(false)
        var calls = SystemCalls.live
        calls.fallocate = { fd, keepSize, offset, length in
            if offset > 0, TestSupport.path(of: fd).contains("/captures/") { TestSupport.sleep(nanoseconds: 30_000_000) }
            return SystemCalls.live.fallocate(fd, keepSize, offset, length)
        }
        calls.ftruncate = { fd, length in
            if armed.current, TestSupport.path(of: fd).hasSuffix("/pool/reserve") { TestSupport.sleep(nanoseconds: 20_000_000) }
            return SystemCalls.live.ftruncate(fd, length)
        }
        calls.pwrite = { fd, buffer, count, offset in
            if armed.current, offset >= ReserveClaims.slotValueBase, TestSupport.path(of: fd).hasSuffix("/pool/pool.lock") {
                TestSupport.sleep(nanoseconds: 10_000_000)
            }
            return SystemCalls.live.pwrite(fd, buffer, count, offset)
        }
        try withPool(capacity: 8 * Self.step, calls: calls) { pool, scratch in
            let capture = try Self.started(pool, to: scratch + "/timed.mov")
            #expect(capture.granter.grantedBytes == 2 * Self.step)
            armed.update { $0 = true }
            #expect(capture.grantTimings.allocate.count == 0, "the start's own grant is not the granter's")
            // Two frames of three eighths of a step: at the second (a frame's start is the head
            // it tells the granter) the lead falls below two steps and the granter asks early.
            let first = TestSupport.pattern(Int(3 * Self.step / 4), seed: 3)
            try capture.append(Array(first[..<Int(3 * Self.step / 8)]))
            try capture.append(Array(first[Int(3 * Self.step / 8)...]))
            #expect(Self.awaiting { capture.granter.grantedBytes == 3 * Self.step }, "the early grant never landed")
            let early = capture.grantTimings
            #expect(early.allocate.count == 1 && early.claim.count == 1 && early.late == 0, "\(early)")
            #expect(early.allocate.percentile(0) >= 30_000_000, "the held fallocate: \(early.allocate.summary)")
            let lead = GrantTimings.streamTime(2 * Self.step - 3 * Self.step / 8, bitrate: Self.options.bitrate)
            #expect(early.leadAtLanding.count == 1 && early.leadAtLanding.maximum == lead,
                    "lead \(early.leadAtLanding.maximum) ns, not \(lead)")
            // A frame past the granted end: the recorder waits for the grant, which lands late.
            let second = TestSupport.pattern(Int(5 * Self.step / 2), seed: 4)
            try capture.append(second)
            #expect(Self.awaiting { capture.grantTimings.cut.count >= 2 }, "the cuts were never timed")
            let result = try capture.finish()
            let timings = capture.grantTimings
            let grants = UInt64((capture.granter.grantedBytes - 2 * Self.step) / Self.step)
            #expect(timings.late == 1, "late grants: \(timings.late)")
            #expect(timings.leadAtLanding.percentile(0) == 0, "the late grant had a lead: \(timings.leadAtLanding.summary)")
            let timed = "\(grants) grants; timed: \(timings.claim.count) claims, \(timings.allocate.count) fallocates, "
                + "\(timings.leadAtLanding.count) leads"
            #expect(timings.allocate.count == grants && timings.claim.count == grants && timings.leadAtLanding.count == grants,
                    "\(timed)")
            #expect(timings.cut.percentile(0) >= 20_000_000, "the held cut: \(timings.cut.summary)")
            #expect(timings.claimHeld.count == grants && timings.claimHeld.percentile(0) >= 10_000_000,
                    "the held claim pwrite: \(timings.claimHeld.summary)")
            #expect(timings.claim.percentile(0) >= timings.claimHeld.percentile(0),
                    "a claim shorter than its hold: \(timings.claim.summary), held \(timings.claimHeld.summary)")
            #expect(result.length == Int64(first.count + second.count))
            #expect(TestSupport.fileHolds(result.path, first + second))
            #expect(try pool.check() == [])
        }
    }

    /// Where a cut of the reserve is held: before its ftruncate (the reserve still holds the
    /// bytes) or after it (they are gone but still counted until their count is cleared).
    enum CutHold: String, CaseIterable, CustomTestStringConvertible {
        case beforeTheFtruncate, afterTheFtruncate
        var testDescription: String { rawValue }
    }

    /// A claim made while a cut of the reserve is in flight finds the reserve as it is, and
    /// waits for no cut (field cases: the C API's test, on CI, ended a capture `storageFull`
    /// at 12 or 15 of 16 MiB, the cut bytes counted twice; then `provideo-bench size` near an
    /// empty reserve: claims queued behind cuts that online discard made take seconds). A pool
    /// of four steps: the start takes two, the first grant after two frames a third, whose cut
    /// is held (before or after its ftruncate) until the granter's claim for a frame needing the
    /// fourth step has been granted, or `holdLimit` passed. It was granted within the hold (a
    /// claim that waited for the size lock, which the held cut holds, would have run the hold
    /// out), behind no cut, and the pool ends exactly full.
    @Test(.timeLimit(.minutes(3)), arguments: CutHold.allCases)
    func aGrantBesideACutFindsTheReserveAsItIs(_ hold: CutHold) throws {
        // Armed once the capture has started (its start cut the reserve on this thread), the
        // first cut after is its cutter's: it is held until the capture holds all four steps.
        let armed = Shared(false), holding = Shared(false), grantedInTheHold = Shared<Bool?>(nil)
        let granted = Shared<() -> Int64>({ 0 })
        // What another lock file description reads of the cuts in flight once the claim beside
        // the held cut has been granted: the cut still stands (its record outlives the claim's end).
        let cutsInFlight = Shared<() -> [ReserveClaims.CutInFlight]>({ [] }), cutsSeen = Shared<[ReserveClaims.CutInFlight]>([])
        var calls = SystemCalls.live
        calls.ftruncate = { fd, length in
            let held = armed.current && TestSupport.path(of: fd).hasSuffix("/pool/reserve")
            func holdTheCut() {
                armed.update { $0 = false }
                holding.update { $0 = true }
                let done = Self.awaiting { granted.current() == 4 * Self.step }
                let seen = cutsInFlight.current()
                cutsSeen.update { $0 = seen }
                grantedInTheHold.update { $0 = done }
                holding.update { $0 = false }
            }
            if held, hold == .beforeTheFtruncate { holdTheCut() }
            let rc = SystemCalls.live.ftruncate(fd, length)
            if held, hold == .afterTheFtruncate { holdTheCut() }
            return rc
        }
        try withPool(capacity: 4 * Self.step, calls: calls) { pool, scratch in
            let capture = try Self.started(pool, to: scratch + "/take.mov")
            #expect(capture.granter.grantedBytes == 2 * Self.step)
            granted.update { $0 = { capture.granter.grantedBytes } }
            let observer = try PoolLock(path: pool.layout.lock, access: pool.access)
            cutsInFlight.update { $0 = { (try? observer.claims.others(.live).cuts) ?? [] } }
            armed.update { $0 = true }
            // Two quarter steps: the second finds the lead below two steps, and the granter takes
            // the third.
            let first = TestSupport.pattern(Int(Self.step / 2), seed: 1)
            try capture.append(Array(first[..<Int(Self.step / 4)]))
            try capture.append(Array(first[Int(Self.step / 4)...]))
            #expect(Self.awaiting { holding.current }, "the granter's grant was never cut")
            #expect(capture.granter.grantedBytes == 3 * Self.step)
            // Up to the pool's last byte: the frame needs the fourth step, the reserve's last.
            let last = TestSupport.pattern(Int(4 * Self.step - Self.step / 2), seed: 2)
            try capture.append(last)
            #expect(Self.awaiting { grantedInTheHold.current != nil }, "the held cut never ended")
            #expect(grantedInTheHold.current == true,
                    "the fourth step was not granted while the cut was held: the claim waited for the cut")
            #expect(cutsSeen.current == [ReserveClaims.CutInFlight(bytes: Self.step, from: 2 * Self.step)],
                    "the cuts in flight after the claim beside the held one ended: \(cutsSeen.current)")
            let result = try capture.finish()
            #expect(capture.grantTimings.claimsBehindCuts == 0,
                    "claims behind cuts: \(capture.grantTimings.claimsBehindCuts) of \(capture.grantTimings.claim.count)")
            #expect(result.length == 4 * Self.step)
            #expect(TestSupport.fileHolds(result.path, first + last))
            #expect(try pool.check() == [])
        }
    }

    /// A cut recorded in a slot that the reserve's size does not place (a slot written by other
    /// hands: its `from` is no size the reserve had) sends a claim to read again under the size
    /// lock, counted as behind the cuts, where it counts the slot's bytes whole: the capture is
    /// granted what is free beside them, never more.
    @Test(.timeLimit(.minutes(3)))
    func aCutTheReserveDoesNotPlaceSendsTheClaimBehindTheCuts() throws {
        try withPool(capacity: 8 * Self.step) { pool, scratch in
            let calls = SystemCalls.live
            let capture = try Self.started(pool, to: scratch + "/take.mov")
            #expect(capture.granter.grantedBytes == 2 * Self.step)
            // Another lock file description claims two steps and records a cut of one of them
            // from a reserve of a size it never had.
            let other = try PoolLock(path: pool.layout.lock, access: pool.access)
            try other.withReserve {
                try other.claims.claim(2 * Self.step, inode: 99, end: 2 * Self.step, calls)
                try other.claims.endClaim(allocated: true, calls)
                try other.claims.beginCut(Self.step, from: 100 * Self.step, calls)
            }
            let observer = try PoolLock(path: pool.layout.lock, access: pool.access)
            #expect(try observer.claims.others(calls).cuts == [ReserveClaims.CutInFlight(bytes: Self.step, from: 100 * Self.step)])
            // Frames up to what the reserve holds beside the other slot's two steps: six of the
            // eight steps were the reserve's, two the other's.
            let frames = TestSupport.pattern(Int(6 * Self.step), seed: 3)
            for start in stride(from: 0, to: frames.count, by: Int(Self.step / 4)) {
                try capture.append(Array(frames[start..<(start + Int(Self.step / 4))]))
            }
            #expect { try capture.append([UInt8](repeating: 1, count: 4096)) } throws: { error in
                (error as? ProVideoError)?.code == .storageFull
            }
            let result = try capture.finish()
            #expect(capture.grantTimings.claimsBehindCuts >= 1, "no claim went behind the cuts")
            #expect(result.length == 6 * Self.step)
            #expect(TestSupport.fileHolds(result.path, frames))
            withExtendedLifetime(other) {}
        }
    }

    /// The claims another lock file description records count, and a holder's end frees its
    /// slot: a claim shows as claimed with its file's new end, then as allocated, then as none
    /// once cleared; a slot whose holder closed its lock file counts nothing though its bytes
    /// remain; a value outside any pool's capacity in a held slot makes the claims unknown
    /// (`.corruptState`), not a number; a slot taken again starts from none.
    @Test func claimsAreSeenByOthersAndDieWithTheirHolder() throws {
        try withPool { pool, _ in
            let calls = SystemCalls.live
            let observer = try PoolLock(path: pool.layout.lock, access: pool.access)
            var holder: PoolLock? = try PoolLock(path: pool.layout.lock, access: pool.access)
            try holder!.withReserve { try holder!.claims.claim(3 << 20, inode: 77, end: 5 << 20, calls) }
            var seen = try observer.claims.others(calls)
            #expect(seen == ReserveClaims.Totals(claimed: 3 << 20, allocated: 0, claimEnds: [77: 5 << 20]))
            try holder!.withReserve { try holder!.claims.endClaim(allocated: true, calls) }
            seen = try observer.claims.others(calls)
            #expect(seen == ReserveClaims.Totals(claimed: 0, allocated: 3 << 20, claimEnds: [:]))
            // A cut in flight of one of the three MiB from a reserve of 10 MiB: placed by the
            // reserve's size on either side of its ftruncate, and by no other.
            try holder!.withReserve { try holder!.claims.beginCut(1 << 20, from: 10 << 20, calls) }
            seen = try observer.claims.others(calls)
            #expect(seen.cuts == [ReserveClaims.CutInFlight(bytes: 1 << 20, from: 10 << 20)])
            #expect(seen.held(reserveSize: 10 << 20) == 3 << 20 && seen.held(reserveSize: 9 << 20) == 2 << 20)
            #expect(seen.held(reserveSize: 8 << 20) == nil && seen.held(reserveSize: 11 << 20) == nil)
            try holder!.withReserve { try holder!.claims.clearCut(1 << 20, calls) }
            seen = try observer.claims.others(calls)
            #expect(seen.allocated == 2 << 20 && seen.cuts.isEmpty && seen.held(reserveSize: 7 << 20) == 2 << 20)
            // Its holder gone, the slot counts nothing: the kernel dropped its lock.
            holder = nil
            #expect(try observer.claims.others(calls) == ReserveClaims.Totals())
            let raw = try FileDescriptor.open(pool.layout.lock, O_RDONLY)
            var stale = [Int64](repeating: 0, count: 2)
            _ = try stale.withUnsafeMutableBytes { try raw.read(into: $0, at: ReserveClaims.slotValueBase, calls) }
            #expect(stale[1] == 2 << 20, "the dead holder's slot no longer holds its value: the test proves nothing")
            // A new holder takes a slot from none; a planted value in it is refused by readers.
            let next = try PoolLock(path: pool.layout.lock, access: pool.access)
            try next.withReserve { try next.claims.claim(1 << 20, inode: 78, end: 1 << 20, calls) }
            #expect(try observer.claims.others(calls) == ReserveClaims.Totals(claimed: 1 << 20, allocated: 0,
                                                                               claimEnds: [78: 1 << 20]))
            let writer = try FileDescriptor.open(pool.layout.lock, O_RDWR)
            let planted = [Int64.max.littleEndian]
            try planted.withUnsafeBytes { try writer.writeAll($0, at: ReserveClaims.slotValueBase + 8, calls) }
            #expect(throws: ProVideoError.self) { try observer.claims.others(calls) }
            do {
                _ = try observer.claims.others(calls)
            } catch let error as ProVideoError {
                #expect(error.code == .corruptState && error.message.contains("claim slot 0"), "\(error)")
            }
            // A cut of more than the slot counts is no cut its holder makes: unknown, not a figure.
            let sound = [Int64(1 << 20).littleEndian]
            try sound.withUnsafeBytes { try writer.writeAll($0, at: ReserveClaims.slotValueBase + 8, calls) }
            #expect(try observer.claims.others(calls).total == 2 << 20)
            let overCut = [Int64(3 << 20).littleEndian, Int64(4 << 20).littleEndian]
            try overCut.withUnsafeBytes { try writer.writeAll($0, at: ReserveClaims.slotValueBase + 32, calls) }
            do {
                _ = try observer.claims.others(calls)
                Issue.record("a cut of 3 MiB in a slot counting 2 MiB was read as a figure")
            } catch let error as ProVideoError {
                #expect(error.code == .corruptState && error.message.contains("cuts 3145728 bytes"), "\(error)")
            }
        }
    }
}

import FoundationEssentials
import Synchronization
import ProVideoSystem

/// Keeps a capture's file granted ahead of its write head, on a thread of its own: the only
/// thread of the capture that calls fallocate(2). The recorder's thread reads what is granted
/// and never waits for a grant unless its overrun policy lets it wait (`wait(reaching:until:)`).
///
/// The thread grants whenever less than the capture's lead (`GrantLead.ask`: four seconds of
/// stream at least, twice the slowest recent grant of the pool's captures, and two steps) is
/// granted beyond the head, or the recorder asked for more than is granted; one grant fills
/// the lead (`GrantLead.fill`: one slowest grant's stream more), so the capture holds less than
/// its fill plus one step it has not written (the bound on the space it can strand). The
/// capture starts with its fill. A lead in time, because a grant's fallocate waits for the
/// filesystem's journal, which a neighbour's fsync of gigabytes of page cache can hold for
/// seconds (measured on this thread: grants of 250 MB took up to 2.1 s on ext4 beside the
/// bench's noise writer, and up to 8.5 s near the disk's limit on a `discard` mount), and on a
/// throttled disk (20 MB/s, cgroup io.max) a 16 MiB grant took 0.8–1.7 s. On ext4 a grant's fallocate also waits for every write of the
/// capture in flight, and the writes submitted meanwhile wait for it (`inode_dio_wait` under
/// the inode lock; measured: 0.1 ms idle, 90–161 ms with 32 writes of 4 MiB in flight), so each
/// grant is a pause in the capture's writes as long as one write's latency (fewer, larger steps
/// pause less often). The step adapts: each grant's step is at least twice what the stream
/// wrote while the previous grant ran, up to four times the configured step. When the reserve
/// is empty it looks again every second (a replenish or a finished capture may refill it), or
/// at once when the recorder asks. A grant's cut of the reserve (`ReserveGrants.cut`) is made
/// by the capture's `ReserveCutter`, so that the next grant never waits for it (issue 44).
///
/// The recorder's thread takes no lock the granter's thread holds (issue 41): what it reads of
/// the grants and what it tells the granter are atomics, each written by one side, and it wakes
/// the granter through an eventfd (`ThreadWake`). A `SCHED_OTHER` granter preempted in a
/// critical section therefore never stalls a real-time recorder; only `wait(reaching:until:)`,
/// where the recorder has chosen to wait for a grant, takes `condition`.
///
/// `@unchecked Sendable`: the atomics are the recorder's view; `uncut`, `cut`, `cuts` and
/// `timings` are read and written only with `condition` locked; `emptyAt` only on the thread;
/// `grants` (the file descriptors and the pool lock used for granting) is used only on the
/// thread, with `grantLock` locked, which also orders every grant before `stop()` returns.
final class CaptureGranter: @unchecked Sendable {
    /// Bytes per grant as configured, a multiple of the reserve's unit.
    let configuredStep: Int64
    private let unit: Int64
    private let grants: ReserveGrants
    private let data: FileDescriptor
    /// The thread's lock for the figures the recorder never reads (internal: a test holds it
    /// to stand for a granter preempted inside it).
    let condition = MonotonicCondition()
    private let grantLock = ThreadLock()
    private let wake: ThreadWake

    // Written by the thread, read by the recorder.
    private let granted: Atomic<Int64>
    private let step: Atomic<Int64>
    private let lead: Atomic<Int64>
    /// The last ask the thread tried to meet, shifted left by one, with bit 0 set when that
    /// try found the reserve empty: one word, so an answer is never read with another's emptiness.
    private let answer = Atomic<UInt64>(0)
    private let failed = Atomic<Bool>(false)
    private let failure = Mutex<ProVideoError?>(nil)
    // Written by the recorder (`advance`, `wait`), read by the thread.
    private let head = Atomic<Int64>(0)
    /// The end the recorder last asked for, and how many asks beyond the granted bytes it made.
    private let wanted = Atomic<Int64>(0)
    private let asked = Atomic<UInt64>(0)
    private let stopping = Atomic<Bool>(false)

    private var emptyAt: UInt64?
    /// Bytes this capture's file was granted that the reserve still holds, until their cut.
    private var uncut: Int64 = 0
    /// Of those, the start's grant's (`init`'s `uncut`), until its cut.
    private var startUncut: Int64 = 0
    /// The cut in progress, from when the reserve's size is read under the size lock until its
    /// claim is cleared: the reserve's size before it, and the bytes it cuts.
    private var cut: Cut?
    private typealias Cut = (reserveBefore: Int64, amount: Int64)
    /// Counts the cuts begun: a reserve size read between two equal counts, with no cut set,
    /// is not torn by a cut of this capture.
    private var cuts: UInt64 = 0
    private var cutter: ReserveCutter?
    /// The declared bitrate, bits per second: the lead in bytes, and a grant's lead at landing
    /// as stream time.
    private let bitrate: Int64
    /// The slowest recent grant of the pool's captures, this one's included.
    private let slowest: SlowestGrant
    /// The bytes the reserve had free after this capture's last claim (`GrantLead`'s room).
    /// The granter's thread's alone.
    private var room: Int64
    /// The captures running when last counted (`GrantLead`'s sharers), at least 1. The
    /// granter's thread's alone.
    private var sharers: Int
    /// Counts the pool's running captures; nil when they cannot be counted (the last count
    /// then stands: unknown is not one).
    private let countSharers: @Sendable () -> Int?
    private var timings = GrantTimings()
    /// How long `stop()` waits for the cutter's last cuts at most, in nanoseconds.
    private static let cutLimit: UInt64 = 30_000_000_000

    /// How long an empty reserve is left alone before the next look, unless asked, in
    /// nanoseconds.
    private static let emptyRetry: UInt64 = 1_000_000_000
    /// The step grows to at most this many times the configured one.
    static let maximumStepGrowth: Int64 = 4

    /// - Parameters:
    ///   - data: the capture's file, opened for writing (a descriptor of the granter's own).
    ///   - granted: its size, the bytes granted so far.
    ///   - uncut: of those, the bytes the reserve still holds (the start's grant, claimed and
    ///     allocated through `grants`' lock): the granter's cutter cuts them first.
    ///   - step: bytes per grant, a multiple of `unit` (the reserve's allocation unit).
    ///   - bitrate: the capture's declared bitrate, bits per second (`GrantLead`,
    ///     `GrantTimings.leadAtLanding`).
    ///   - room: the bytes the reserve had free after the start's claim (`GrantLead`: a lead
    ///     takes at most an eighth of the room at the capture's last claim, shared).
    ///   - sharers: the captures running at the start, this one included; `countSharers`
    ///     counts them again after each claim.
    ///   - slowest: the slowest recent grant of the pool's captures, which this one's grants add to.
    /// - Throws: `.ioError` when the thread's eventfd cannot be made (`ThreadWake`), or its
    ///   thread or its cutter's cannot be started (pthread_create(3)); the start's `uncut` bytes
    ///   are then still the caller's to give back.
    init(grants: ReserveGrants, data: FileDescriptor, granted: Int64, uncut: Int64, step: Int64, bitrate: Int64,
         room: Int64, sharers: Int, countSharers: @escaping @Sendable () -> Int?, slowest: SlowestGrant) throws {
        self.grants = grants
        self.data = data
        self.configuredStep = step
        self.bitrate = bitrate
        self.slowest = slowest
        unit = grants.reserve.unit
        self.granted = Atomic(granted)
        self.step = Atomic(step)
        self.room = room
        self.sharers = max(sharers, 1)
        self.countSharers = countSharers
        lead = Atomic(GrantLead(step: step, bitrate: bitrate, room: room, sharers: sharers,
                                slowestGrant: slowest.slowest(now: MonotonicTime.now())).ask)
        wake = try ThreadWake()
        // Weak: a cut still failing at `stop()`'s deadline ends after the granter may be gone.
        cutter = try ReserveCutter(grants: grants, beginning: { [weak self] reserveBefore, amount in
            self?.cutBegan(reserveBefore: reserveBefore, amount: amount)
        }, ended: { [weak self] amount, made, took in
            self?.cutEnded(amount: amount, made: made, took: took)
        })
        (self.uncut, startUncut) = (uncut, uncut)
        do {
            try DetachedThread.start(name: "provideo-granter") { [self] in run() }
        } catch {
            // Nothing was handed to the cutter: its thread ends at once, and the start that
            // fails gives the uncut bytes back itself (`CaptureStart`'s `abandonStart`).
            _ = cutter?.finish(until: MonotonicTime.now())
            throw error
        }
        if uncut > 0 { cutter?.cut(uncut) }
    }

    /// The bytes granted so far: the capture may write below this offset.
    var grantedBytes: Int64 { granted.load(ordering: .sequentiallyConsistent) }

    /// Bytes the capture can still write beyond `length`: what its file was granted beyond it,
    /// plus what the reserve holds free of other grants in flight (reads the reserve's size and
    /// the claims, `ReserveClaims`). Exact with respect to this capture's own grants and never
    /// waits for one: its claims in flight are its own bytes, its granted bytes the reserve
    /// still holds are counted once, and while its cutter cuts the reserve (under the size
    /// lock, so nobody else changes it) the figure is the one after the cut; a size read that a
    /// cut began beside is read again. After three torn reads it is the lower figure, never
    /// over. A read of the reserve or the claims that fails counts none of them: what this
    /// capture was granted is proven, the rest is not.
    func remainingCapacity(beyond length: Int64) -> Int64 {
        var floor: Int64 = 0
        for _ in 0..<3 {
            let (granted, uncut, cut, cuts) = snapshot()
            floor = CapacityAccount.remaining(granted: granted, length: length, reserve: 0)
            let free: Int64
            do {
                let others = try grants.lock.claims.others(grants.reserve.calls).total
                let reserve = try cut.map { $0.reserveBefore - $0.amount } ?? grants.reserve.size()
                free = reserve - others - (uncut - (cut?.amount ?? 0))
            } catch {
                return floor
            }
            let figure = CapacityAccount.remaining(granted: granted, length: length, reserve: free)
            let (_, _, cutAfter, cutsAfter) = snapshot()
            if cut != nil || (cutAfter == nil && cutsAfter == cuts) { return figure }
            floor = min(figure, floor)
        }
        return floor
    }

    private func snapshot() -> (granted: Int64, uncut: Int64, cut: Cut?, cuts: UInt64) {
        condition.lock()
        defer { condition.unlock() }
        return (grantedBytes, uncut, cut, cuts)
    }

    private func cutBegan(reserveBefore: Int64, amount: Int64) {
        condition.lock()
        defer { condition.unlock() }
        cut = (reserveBefore, amount)
        cuts += 1
    }

    private func cutEnded(amount: Int64, made: Bool, took: UInt64) {
        condition.lock()
        defer { condition.unlock() }
        cut = nil
        if made {
            uncut -= amount
            // The start's cut (and a grant's cut made with it, as one) is not a grant's step.
            let started = min(startUncut, amount)
            startUncut -= started
            if started == 0 { timings.cut.record(took) }
        }
    }

    /// The start's grant is still to be cut from the reserve (`init`'s `uncut`).
    var startCutPending: Bool {
        condition.lock()
        defer { condition.unlock() }
        return startUncut > 0
    }

    /// The grants' timings so far (`GrantTimings`).
    var grantTimings: GrantTimings {
        condition.lock()
        defer { condition.unlock() }
        return timings
    }

    /// The grants as they stand, without waiting or locking.
    var current: Grants { grants(answering: asked.load(ordering: .sequentiallyConsistent)) }

    /// The grants as of now, `answered` for the ask numbered `ask`. The answer is read before
    /// the granted bytes, which the thread publishes before it: they are this answer's or newer.
    private func grants(answering ask: UInt64) -> Grants {
        let answer = answer.load(ordering: .sequentiallyConsistent)
        let failure = failed.load(ordering: .sequentiallyConsistent) ? failure.withLock { $0 } : nil
        return Grants(granted: grantedBytes, reserveEmpty: answer & 1 == 1, answered: answer >> 1 >= ask,
                      failure: failure, step: step.load(ordering: .sequentiallyConsistent),
                      lead: lead.load(ordering: .sequentiallyConsistent))
    }

    /// Tells the thread the capture has appended up to `head` bytes and needs `end` granted;
    /// wakes it when less than its lead is granted ahead or `end` is beyond the granted bytes.
    /// Never waits for a grant and takes no lock; called on the recorder's thread only.
    func advance(to head: Int64, needing end: Int64) -> Grants {
        self.head.store(head, ordering: .sequentiallyConsistent)
        let before = current
        var ask = asked.load(ordering: .sequentiallyConsistent)
        // An ask still pending for this need or a larger one is not asked again, so that it
        // can be answered (a recorder refused at every frame would otherwise never learn that
        // the reserve is empty). The end is published before the ask: a thread that sees the
        // ask sees what it asks for.
        let pending = !before.answered && end <= wanted.load(ordering: .sequentiallyConsistent)
        wanted.store(end, ordering: .sequentiallyConsistent)
        if end > before.granted && !pending {
            ask += 1
            asked.store(ask, ordering: .sequentiallyConsistent)
        }
        if before.granted - head < before.lead || end > before.granted { wake.wake() }
        return grants(answering: ask)
    }

    /// Waits until `end` bytes are granted, the thread found the reserve empty after this
    /// call asked, the grants failed or stopped, or `deadline` (`MonotonicTime`) passed.
    /// Called on the recorder's thread only, when its overrun policy lets it wait.
    func wait(reaching end: Int64, until deadline: UInt64) -> Grants {
        wanted.store(end, ordering: .sequentiallyConsistent)
        let ask = asked.add(1, ordering: .sequentiallyConsistent).newValue
        wake.wake()
        condition.lock()
        defer { condition.unlock() }
        while true {
            let grants = grants(answering: ask)
            guard grants.granted < end, grants.failure == nil, !stopping.load(ordering: .sequentiallyConsistent),
                  !(grants.answered && grants.reserveEmpty) else { return grants }
            guard condition.wait(until: deadline) else { return self.grants(answering: ask) }
        }
    }

    /// Stops granting; returns once no grant is in progress (a grant waits at most 30 s for
    /// the reserve lock), so the capture's file does not change after this. Returns the bytes
    /// granted.
    func stop() -> Int64 {
        stopping.store(true, ordering: .sequentiallyConsistent)
        wake.wake()
        condition.lock()
        condition.broadcast()
        condition.unlock()
        grantLock.lock()
        defer { grantLock.unlock() }
        _ = cutter?.finish(until: MonotonicTime.now() + Self.cutLimit)
        return grantedBytes
    }

    private func run() {
        while !stopping.load(ordering: .sequentiallyConsistent) {
            // The ask before its end (`advance` publishes them the other way round).
            let ask = asked.load(ordering: .sequentiallyConsistent)
            let wanted = wanted.load(ordering: .sequentiallyConsistent)
            let headBefore = head.load(ordering: .sequentiallyConsistent)
            let from = grantedBytes, step = step.load(ordering: .sequentiallyConsistent)
            let now = MonotonicTime.now()
            // Read again at every look: another capture's slow grant lengthens this lead now.
            let lead = GrantLead(step: step, bitrate: bitrate, room: room, sharers: sharers,
                                 slowestGrant: slowest.slowest(now: now))
            self.lead.store(lead.ask, ordering: .sequentiallyConsistent)
            let resting = ask == answer.load(ordering: .sequentiallyConsistent) >> 1
                && emptyAt.map { now < $0 + Self.emptyRetry } == true
            let short = wanted > from || from - headBefore < lead.ask
            guard short, !resting, !failed.load(ordering: .sequentiallyConsistent) else {
                // A change the recorder makes after the look above wakes this wait at once.
                wake.wait(until: now + (resting ? Self.emptyRetry / 4 : Self.emptyRetry))
                continue
            }
            // A need beyond the granted bytes takes what it needs, not a shared half; a lead
            // short by more than a step is filled in one grant.
            let needing = wanted > from
            let bytes = max(step, wanted - from, lead.fill - (from - headBefore))
            grantLock.lock()
            // `stop()` may have come before the lock and found `grantLock` free: it has
            // returned, so the capture's file must not change now.
            if stopping.load(ordering: .sequentiallyConsistent) {
                grantLock.unlock()
                break
            }
            var added: Int64 = 0
            var error: ProVideoError?
            var full = false, busy = false
            do {
                // The new bytes are the recorder's once the file holds them; the reserve's cut
                // (its discards) is the cutter's.
                let started = MonotonicTime.now()
                let (claimed, roomLeft, behindCuts, claimHeld) = try grants.claim(bytes, for: data, granted: from,
                                                                                  sharing: !needing)
                room = roomLeft
                if let counted = countSharers() { sharers = max(counted, 1) }
                let claimedAt = MonotonicTime.now()
                if claimed > 0 {
                    let cutting = try grants.allocate(claimed, to: data, granted: from)
                    let allocatedAt = MonotonicTime.now()
                    slowest.record(allocatedAt - started, at: allocatedAt)
                    // Late: the recorder had asked for bytes past the old end (it waited, or
                    // was refused); its lead then was none.
                    let late = self.wanted.load(ordering: .sequentiallyConsistent) > from
                    let lead = from - head.load(ordering: .sequentiallyConsistent)
                    condition.lock()
                    granted.store(from + claimed, ordering: .sequentiallyConsistent)
                    if cutting { uncut += claimed }
                    timings.claim.record(claimedAt - started)
                    timings.claimHeld.record(claimHeld)
                    if behindCuts { timings.claimsBehindCuts += 1 }
                    timings.allocate.record(allocatedAt - claimedAt)
                    if late { timings.late += 1 }
                    timings.leadAtLanding.record(late ? 0 : GrantTimings.streamTime(lead, bitrate: bitrate))
                    condition.unlock()
                    condition.broadcast()
                    if cutting { cutter?.cut(claimed) }
                    added = claimed
                }
            } catch let failed as ProVideoError {
                // The reserve lock stayed busy: try again later. A filesystem too full for the
                // grant even after the reserve gave its bytes up is an empty reserve to the
                // capture (it ends `storageFull`, keeping what it has); anything else fails
                // the grants.
                switch failed.code {
                case .busy: busy = true
                case .notEnoughSpace: full = true
                default: error = failed
                }
            } catch let other {
                error = ProVideoError(.ioError, "a grant failed: \(other)", path: data.path)
            }
            // The answer is published before `grantLock` is released: `stop()` returns the final size.
            assert(added == 0 || grantedBytes == from + added, "a grant returned bytes it did not publish")
            let empty = (added == 0 && error == nil && !busy) || full
            emptyAt = empty ? MonotonicTime.now() : nil
            let written = head.load(ordering: .sequentiallyConsistent) - headBefore
            condition.lock()
            if let error {
                failure.withLock { $0 = error }
                failed.store(true, ordering: .sequentiallyConsistent)
            }
            self.step.store(Self.adaptedStep(configured: configuredStep, unit: unit, writtenDuringGrant: written),
                            ordering: .sequentiallyConsistent)
            answer.store(ask << 1 | (empty ? 1 : 0), ordering: .sequentiallyConsistent)
            condition.unlock()
            grantLock.unlock()
            condition.broadcast()
        }
    }

    /// The next grants' step: at least twice the bytes the stream wrote while the last grant
    /// ran, so that a slow filesystem is granted in fewer, larger steps (each grant pauses the
    /// capture's writes on ext4); rounded up to `unit`, between the configured step and
    /// `maximumStepGrowth` times it.
    static func adaptedStep(configured: Int64, unit: Int64, writtenDuringGrant written: Int64) -> Int64 {
        let doubled = written >= Int64.max / 4 ? Int64.max / 2 : 2 * max(written, 0)
        let wanted = (doubled + unit - 1) / unit * unit
        return min(max(configured, wanted), configured * maximumStepGrowth)
    }
}

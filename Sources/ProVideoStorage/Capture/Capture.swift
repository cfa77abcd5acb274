import FoundationEssentials
import Glibc
import Synchronization
import ProVideoSystem
import ProVideoJournal
import ProVideoWritePath

/// One recording being written into a pool. Start it with `Pool.startCapture(to:options:)`,
/// `append` frames, patch earlier bytes with `patch(_:at:)`, then `finish()` (the recording
/// moves to its destination) or `cancel()`.
///
/// `Sendable`, with a single-owner rule checked at run time: hand the capture to the thread or
/// task that records (a real-time thread, a task), and make one call at a time. A call made
/// while another is running on another thread throws `.invalidArgument` before it touches
/// anything (one atomic compare-and-exchange per call). Its properties (`length`,
/// `statistics`, `remainingCapacity`, `committedLength`) belong to the owner too: read them on
/// the owning thread, between calls; other threads and processes read `Pool.status()`.
/// Dropping it without `finish()` or `cancel()` stops its granter, which waits for a grant in
/// progress (the reserve lock: at most 30 s).
///
/// The capture writes into a file of its own whose blocks the pool's reserve granted ahead of
/// the write head (`CaptureGranter`, on a thread of its own), so every write overwrites
/// preallocated blocks: the write path never allocates disk space or memory. Frames go into a fixed set of aligned buffers (`BufferRing`); a full
/// buffer is written with `O_DIRECT` at its offset while the next one fills, and durability
/// commits run beside the writes (`CommitPipeline`). Docs/WRITE-PATH.md has the state machine.
///
/// Promises that hold by construction:
/// - `append` never makes a grant and waits for the disk only when every buffer is in flight,
///   and then, like for a grant the granter has not made yet, only per
///   `options.overrunPolicy` (`.fail`: not at all).
/// - Bounds, in full: a call waits for the disk at most `stallLimit` (30 s) from its start,
///   all its waits together (a frame larger than every buffer waits for its earlier pieces
///   within it); a call whose request failed then waits up to another `stallLimit` for the
///   capture's other requests to stop before it throws. `finish` adds, after the disk: up to
///   30 s for a grant in progress (the pool's reserve lock), then the placement: a rename, or
///   on another filesystem a copy and its verification, as long as they take, under the
///   pool's mutation lock (waited for up to 30 s).
/// - The first failed write or flush fails the capture: every later call throws that error at
///   once, and `capturing` is released only after every request completed or was cancelled,
///   so no write of the capture lands after another process may salvage it.
public final class Capture {
    /// The absolute path the recording moves to on `finish()`.
    public let destination: String
    public let options: CaptureOptions
    /// Bytes appended so far: the recording's length.
    public var length: Int64 { writer.length }
    /// What the capture did so far.
    public var statistics: CaptureStatistics { writer.statistics }

    let host: CaptureHost
    let files: CaptureFiles
    let journal: CaptureJournal
    let claim: CaptureClaim
    let granter: CaptureGranter
    /// The write path: buffers, commits, the engine and its requests.
    package let writer: CaptureWriter
    /// The bytes granted to the capture's file so far, as last seen: it may write below this
    /// offset. The granter is told the head once less than its lead (`grantLead`, as
    /// last seen) are left ahead.
    var capacity: Int64
    var grantLead: Int64
    var state = State.open

    enum State { case open, failed(ProVideoError), closed }

    /// Set while a call runs (`enterCall`): the single-owner rule, checked.
    private let inCall = Atomic<Bool>(false)

    /// The longest any call waits for the disk before the capture fails, in nanoseconds
    /// (`CaptureWriter.stallLimit`).
    static let stallLimit = CaptureWriter.stallLimit

    init(host: CaptureHost, files: CaptureFiles, journal: CaptureJournal, claim: CaptureClaim, data: FileDescriptor,
         granter: CaptureGranter, options: CaptureOptions) throws {
        self.host = host
        self.files = files
        self.journal = journal
        self.claim = claim
        self.granter = granter
        self.options = options
        self.destination = journal.destination
        let grants = granter.current
        (capacity, grantLead) = (grants.granted, grants.lead)
        let slotSize = options.resolvedWriteSize(alignment: journal.alignment, optimalIOSize: host.optimalIOSize)
        writer = try CaptureWriter(
            data: data, progressPath: files.progress, commitPath: files.commit, alignment: journal.alignment,
            slotSize: slotSize, count: options.bufferCount(writeSize: slotSize), engine: options.engine,
            durabilityInterval: options.durabilityInterval, calls: host.calls,
            releaseSpare: { [spare = host.spare, calls = host.calls] in spare?.release(calls) == true })
    }

    // A capture dropped without `finish()` or `cancel()` stops granting; its files wait for
    // the next `Pool.open` or `provideo recover`, which salvages them.
    deinit { _ = granter.stop() }

    static func now() -> UInt64 { MonotonicTime.now() }

    /// Bytes the recording can still grow by: what its file was granted beyond `length`, plus
    /// the pool's reserve not yet granted to any capture (reads the reserve's size). Never
    /// waits for a grant, and a grant of this capture in progress is counted once: the figure
    /// moves only as bytes are appended or as other captures take or give back reserve.
    public var remainingCapacity: Int64 { granter.remainingCapacity(beyond: length) }

    /// Bytes a crash cannot lose: flushed and recorded as committed.
    public var committedLength: Int64 { writer.committedLength }

    // MARK: Append and patch

    /// Appends one frame (any size, 1 byte to tens of MB). Returns once the bytes are copied
    /// into a buffer; waits for the disk only when every buffer is in flight (then per
    /// `options.overrunPolicy`). A frame is accepted whole or not at all; a frame larger than
    /// all buffers together is taken once they are all free, then copied as writes complete.
    /// - Throws: `.storageFull` when the frame does not fit in what the capture was granted
    ///   and the pool's reserve has nothing left to grant (the capture stays open: `finish()`
    ///   still produces the accepted bytes); `.overrun` (the capture stays
    ///   open); the capture's first error (`.ioError`, `.notEnoughSpace`,
    ///   `.invariantViolated`) once a write failed; `.captureClosed`.
    public func append(_ frame: UnsafeRawBufferPointer) throws {
        var copied = 0
        try append(count: frame.count) { piece in
            piece.copyMemory(from: UnsafeRawBufferPointer(rebasing: frame[copied..<copied + piece.count]))
            copied += piece.count
        }
    }

    /// Appends `frame`; see `append(_:)`.
    public func append(_ frame: [UInt8]) throws {
        try frame.withUnsafeBytes { try append($0) }
    }

    /// Appends one frame of `count` bytes that `fill` writes straight into the capture's
    /// buffers, for a producer (an encoder, a capture card's DMA) that can write its output
    /// where it is told: no copy.
    ///
    /// `fill` runs on the caller's thread, once per piece: consecutive pieces of the frame's
    /// place in the buffers, in order, together exactly `count` bytes. A piece is at most one
    /// write (`writeSize`, 4 MiB by default) and ends at a buffer boundary, so a frame spans
    /// `count / writeSize` + 1 pieces or fewer; pieces are not aligned in general. `fill` must
    /// write every byte of its piece (bytes it skips keep whatever an earlier frame left there,
    /// and go to disk) and must not keep the pointer. It cannot fail: produce the frame first
    /// if producing can fail. Otherwise as `append(_:)`: the room for the frame is found before
    /// the first piece (`fill` is never called for a refused frame).
    /// - Parameters:
    ///   - count: bytes in the frame; 0 counts an empty frame.
    ///   - fill: writes each piece of the frame, on the caller's thread (see above).
    /// - Throws: `.invalidArgument` for a negative `count`; otherwise as `append(_:)`.
    public func append(count: Int, filling fill: (UnsafeMutableRawBufferPointer) -> Void) throws {
        try enterCall()
        defer { leaveCall() }
        let started = Self.now()
        // Refused frames count too: the latency says how long the recorder was held up.
        defer { writer.statistics.appendLatency.record(Self.now() - started) }
        try checkOpen()
        guard count >= 0 else { throw ProVideoError(.invalidArgument, "a frame cannot have \(count) bytes") }
        let overrunDeadline = options.overrunPolicy.deadline(from: started)
        try requireGranted(length + Int64(count), waitingUntil: overrunDeadline)
        // Room for the whole frame is found (or the overrun policy gives up) before any byte
        // is written, so a frame is accepted whole or not at all.
        let needed = min(count, writer.mostSpace)
        guard try guarded({ try writer.makeRoom(for: needed, waitingUntil: overrunDeadline) }) else {
            throw overrunRefusal("the frame was not accepted")
        }
        try guarded { try writer.append(count: count, granted: capacity, until: started + Self.stallLimit, filling: fill) }
    }

    /// Processes finished writes without waiting: publishes progress to other processes and
    /// starts a due durability commit. `append` does this too; call `poll` at least every
    /// `durabilityInterval` (and every second) while the recorder waits for input, so other
    /// processes see a live `remainingCapacity` and the last frames become durable.
    /// - Throws: the capture's first error; `.captureClosed`.
    public func poll() throws {
        try enterCall()
        defer { leaveCall() }
        try checkOpen()
        try guarded { try writer.poll() }
    }

    /// Makes every byte appended and patched so far durable (a mounted file's `fsync(2)`):
    /// commits now, without waiting for `durabilityInterval`, until `committedLength` reaches
    /// `length`, within `stallLimit`. Waits for the disk: not for a real-time thread.
    /// - Throws: the capture's first error; `.ioError` when the commit did not come within
    ///   `stallLimit`; `.captureClosed`.
    package func commitAppended() throws {
        try enterCall()
        defer { leaveCall() }
        try checkOpen()
        let deadline = Self.now() + Self.stallLimit
        try guarded { try writer.commitAppended(until: deadline) }
    }

    /// Counts and describes a refusal because every buffer stayed in flight past the overrun
    /// policy; `refused` says what was not done.
    func overrunRefusal(_ refused: String, cause: String = "every capture buffer is in flight") -> ProVideoError {
        writer.statistics.overrunFailures += 1
        let detail = options.overrunPolicy == .fail ? "overrun policy: fail" : "waited the overrun policy's limit"
        return ProVideoError(.overrun, "overrun: \(cause) (\(detail)); \(refused). The disk is "
                             + "slower than the stream: raise the buffer budget or lower the bitrate", path: destination)
    }

    /// How long its grants took, step by step, and their lead at landing; readable from any
    /// thread, before and after `finish()` (`GrantTimings`).
    package var grantTimings: GrantTimings { granter.grantTimings }

    /// The capture's file in the pool, for tools of this package that write it directly (the
    /// bench's fio pass); call `ensureGranted` first so they write preallocated blocks only.
    package var file: String { files.data }

    /// Grants the capture's file its first `bytes` bytes, waiting up to `stallLimit` for the
    /// granter's thread.
    /// - Throws: `.storageFull` when the pool's reserve cannot give them; a grant's error.
    package func ensureGranted(_ bytes: Int64) throws {
        try requireGranted(bytes, waitingUntil: Self.now() + Self.stallLimit)
    }

    /// Makes sure the capture's file is granted up to `end` bytes. The granter's thread keeps
    /// it ahead; when a frame finds it behind, this waits for it until `deadline` (the overrun
    /// policy's, nil for `.fail`: not at all), never granting on the caller's thread.
    /// - Throws: `.storageFull` when the reserve has nothing left for it; `.overrun` (counted)
    ///   when the grant did not come in time; a grant's error (`.ioError`). The capture stays
    ///   open either way.
    func requireGranted(_ end: Int64, waitingUntil deadline: UInt64?) throws {
        // Most appends find seconds of grant ahead and do not touch the granter.
        guard end > capacity - grantLead else { return }
        var grants = granter.advance(to: length, needing: end)
        if end > grants.granted, let deadline { grants = granter.wait(reaching: end, until: deadline) }
        (capacity, grantLead) = (grants.granted, grants.lead)
        guard end > capacity else { return }
        if let failure = grants.failure { throw failure }
        // An empty reserve is `.storageFull` only once the granter has answered this ask: an
        // older answer may predate a replenish (the frame is then an overrun, counted).
        if grants.reserveEmpty && grants.answered {
            throw ProVideoError(.storageFull, "storage full: the pool's reserve has no space left for this capture "
                                + "(\(capacity - length) bytes granted beyond the recording, the frame needs "
                                + "\(end - length)); \(length) bytes were accepted and finish() keeps them", path: destination)
        }
        writer.statistics.overruns += 1
        writer.statistics.grantOverruns += 1
        throw overrunRefusal("the frame was not accepted", cause: "the pool has not yet granted the space this frame needs "
                             + "(the filesystem's fallocate is slower than the stream)")
    }

    /// Begins a call, or throws when another thread's call is running (see `Capture`).
    func enterCall() throws {
        guard inCall.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else {
            throw ProVideoError(.invalidArgument, "the capture is already in a call on another thread (or from inside "
                                + "an append's fill): a capture is used by one thread at a time; hand it over, do "
                                + "not share it", path: destination)
        }
    }

    func leaveCall() { inCall.store(false, ordering: .releasing) }

    /// Runs `body`; its first error fails the capture: the state keeps the error (every later
    /// call throws it at once), every request still in the engine is cancelled and waited for,
    /// and only then is `capturing` released, so that `provideo recover` in another process
    /// never sees a write of this capture land.
    func guarded<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch {
            var failure = writer.failure(from: error)
            // What was committed is salvaged by a recovery, once this capture lets go of it.
            if !failure.remedies.contains(.recover) { failure.remedies.append(.recover) }
            if writer.stopRequests() {
                _ = granter.stop()
                claim.release()
            } else {
                failure.message += "; \(writer.outstanding) writes did not complete within \(Self.stallLimit / 1_000_000_000) s, "
                    + "so the pool stays busy until this process exits"
            }
            state = .failed(failure)
            throw failure
        }
    }

    func checkOpen() throws {
        switch state {
        case .open: return
        case .failed(let error): throw error
        case .closed: throw ProVideoError(.captureClosed, "the capture has already ended")
        }
    }
}

// The single-owner rule is checked at run time (`enterCall`); the state a call changes is
// touched only inside a call.
extension Capture: @unchecked Sendable {}

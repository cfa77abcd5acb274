import Glibc
import ProVideoSystem
import ProVideoIO
import ProVideoJournal

/// The write path of one capture: its buffers (`BufferRing`), its durability commits
/// (`CommitPipeline`), its engine and every request issued to it. The capture above it owns
/// the grants, the claim and the public API; it hands this writer the bytes it may write below
/// (`granted`) and the deadlines its policy allows, and fails itself on the writer's first
/// error (`failure(from:)`, then `stopRequests`). One thread at a time (the capture's
/// single-owner rule); nothing here waits on the disk unless a caller's deadline allows it.
/// Docs/WRITE-PATH.md has the state machine.
package final class CaptureWriter {
    /// Bytes accepted so far: the recording's length.
    package internal(set) var length: Int64 = 0
    package var statistics: CaptureStatistics

    let data: FileDescriptor
    let progress: FileDescriptor
    let commitFile: FileDescriptor
    let calls: SystemCalls
    /// Gives the pool's spare blocks back once (a full btrfs, see `handle`); true when it did.
    let releaseSpare: () -> Bool
    let engine: WriteEngine
    let alignment: Int
    let memory: AlignedBuffer
    let patchBuffer: AlignedBuffer
    let commitRecord: AlignedBuffer
    /// One aligned block: the capture's length (8 bytes, little-endian), then the counters.
    let progressRecord: AlignedBuffer
    var ring: BufferRing
    var commits: CommitPipeline
    /// Requests handed to the engine whose completion has not come back.
    package internal(set) var outstanding = 0
    /// A patch was made since the last `commitAppended`.
    var patchedSinceCommit = false
    /// The length other processes last saw, and when (`progressInterval`).
    var published: (length: Int64, commits: Int64, overruns: Int64, at: UInt64) = (-1, 0, 0, 0)
    /// Whether a progress write is in the engine (`progressRecord` must not change then).
    var progressInFlight = false
    /// ENOSPC retries of each request since it last completed (see `handle`), by
    /// `noSpaceRetryIndex`: counted per request, so that others' successes (a progress write
    /// every 250 ms) never reset a write's bound. Allocated at start.
    var noSpaceRetries: [Int]

    /// The longest any call waits for the disk (a write or flush to complete) before the
    /// capture fails with `.ioError`, in nanoseconds: a device silent this long is gone (the
    /// Linux SCSI command timeout is 30 s, `/sys/block/*/device/timeout`).
    package static let stallLimit: UInt64 = 30_000_000_000
    /// How often other processes see the capture's length change, at most, in nanoseconds.
    package static let progressInterval: UInt64 = 250_000_000

    /// Allocates every buffer, makes the engine over them and writes the first progress block
    /// (length 0) before the capture shows a running engine.
    /// - Parameters:
    ///   - slotSize: bytes per buffer (a multiple of `alignment`); `count` buffers.
    ///   - durabilityInterval: nanoseconds between commits.
    /// - Throws: `.invalidArgument` when the buffers cannot be allocated; `.invariantViolated`
    ///   for buffers that break the ring's rules; the engine's and the progress write's errors.
    package init(data: FileDescriptor, progressPath: String, commitPath: String, alignment: Int, slotSize: Int, count: Int,
                 engine choice: EngineChoice, durabilityInterval: UInt64, calls: SystemCalls,
                 releaseSpare: @escaping () -> Bool) throws {
        self.data = data
        self.calls = calls
        self.releaseSpare = releaseSpare
        self.alignment = alignment
        progress = try FileDescriptor.open(progressPath, O_RDWR, direct: true)
        commitFile = try FileDescriptor.open(commitPath, O_RDWR | O_DSYNC)
        guard let memory = RingMemory.take(length: slotSize * count, alignment: alignment),
              // Patches (a muxer rewriting a header) are rare and small: a 4 MiB window kept
              // resident for them was 4 MB of a GStreamer sink's 49 MB (Docs/C-LIBRARY.md).
              let patchBuffer = AlignedBuffer(length: slotSize, alignment: alignment, populated: false),
              let commitRecord = AlignedBuffer(length: alignment, alignment: alignment),
              let progressRecord = AlignedBuffer(length: alignment, alignment: alignment)
        else {
            throw ProVideoError(.invalidArgument, "cannot allocate \(slotSize * count) bytes of capture buffers; "
                                + "lower the buffer budget")
        }
        self.memory = memory
        self.patchBuffer = patchBuffer
        self.commitRecord = commitRecord
        self.progressRecord = progressRecord
        let ring: BufferRing
        do { ring = try BufferRing(memory: memory.bytes, slotSize: slotSize, alignment: alignment) } catch let violation as WritePathViolation {
            throw ProVideoError(.invariantViolated, "the capture's buffers broke their own rule: \(violation.problem)")
        }
        self.ring = ring
        noSpaceRetries = [Int](repeating: 0, count: 2 * ring.slots.count + 1)
        let slots = (0..<count).map { UnsafeMutableRawBufferPointer(start: ring.base(of: $0), count: slotSize) }
        // Each buffer has one write or one flush in flight at most, plus the data sync, the
        // commit record, the progress block and a cancellation.
        engine = CommitBeforeDataSyncFault.applied(
            to: try WriteEngineFactory.make(choice, buffers: slots, queueDepth: count + 4, calls: calls))
        statistics = CaptureStatistics(engine: engine.name)
        commits = CommitPipeline(interval: durabilityInterval, now: Self.now())
        try progress.writeAll(UnsafeRawBufferPointer(progressRecord.bytes), at: 0, alignment: alignment, calls)
        published = (0, 0, 0, Self.now())
    }

    /// A ring nothing reads or writes any more goes to the next capture (`RingMemory`); one
    /// with requests in flight (a capture dropped mid-write) is unmapped with the writer.
    deinit { if outstanding == 0 { RingMemory.give(memory) } }

    static func now() -> UInt64 { MonotonicTime.now() }

    /// Bytes a crash cannot lose: flushed and recorded as committed.
    package var committedLength: Int64 { commits.committed }

    /// The most bytes one frame can be given room for: the buffer being filled and every other.
    package var mostSpace: Int { ring.mostSpace }

    // MARK: Appends

    /// Makes room for `bytes` in the buffers. When every buffer is in flight it waits until
    /// `deadline` (nil: not at all) and counts an overrun. - Returns: false when it gave up.
    package func makeRoom(for bytes: Int, waitingUntil deadline: UInt64?) throws -> Bool {
        try reap(waitNanoseconds: 0)
        guard ring.space < bytes else { return true }
        statistics.overruns += 1
        guard let deadline else { return false }
        while ring.space < bytes {
            let now = Self.now()
            guard now < deadline else { return false }
            try reap(waitNanoseconds: Int64(deadline - now))
        }
        return true
    }

    /// Writes one frame of `count` bytes into the buffers (room was made, `makeRoom`): `fill`
    /// writes each piece in order; a full buffer is sealed and written. Nothing goes past
    /// `granted`. A frame larger than every buffer waits for its earlier pieces until `deadline`.
    package func append(count: Int, granted: Int64, until deadline: UInt64,
                        filling fill: (UnsafeMutableRawBufferPointer) -> Void) throws {
        var filled = 0
        while filled < count {
            if ring.filling == nil { try startFilling(granted: granted, until: deadline) }
            let piece = try ring.nextPiece(upTo: count - filled)
            fill(piece)
            filled += piece.count
            length += Int64(piece.count)
            if try ring.didFill(piece.count, frameEnd: filled == count ? length : nil) { try sealFilling() }
        }
        statistics.frames += 1
        statistics.bytes += Int64(count)
        try service()
    }

    /// Contiguous room for the next bytes in the buffer being filled, up to `count` bytes
    /// (see `Capture.reserveInPlace`): takes a free buffer when none is filling, waiting per
    /// `deadline` when every buffer is in flight. - Returns: nil when that wait gave up.
    package func reserveInPlace(upTo count: Int, granted: Int64, waitingUntil deadline: UInt64?,
                                stallDeadline: UInt64) throws -> UnsafeMutableRawBufferPointer? {
        if ring.filling == nil {
            // A fresh buffer: any free one has room (makeRoom for 1 byte waits for one).
            guard try makeRoom(for: 1, waitingUntil: deadline) else { return nil }
            try startFilling(granted: granted, until: stallDeadline)
        }
        return try ring.nextPiece(upTo: count)
    }

    /// The room the last `reserveInPlace` handed out; 0 when no buffer is filling.
    package func roomInPlace() throws -> Int {
        ring.filling == nil ? 0 : try ring.nextPiece(upTo: Int.max).count
    }

    /// Counts `count` bytes written into the room `reserveInPlace` handed out (at most
    /// `roomInPlace()`) as appended; `endsFrame` marks the end of a frame there.
    package func commitInPlace(_ count: Int, endsFrame: Bool) throws {
        if ring.filling != nil {
            length += Int64(count)
            if try ring.didFill(count, frameEnd: endsFrame ? length : nil) { try sealFilling() }
        }
        statistics.bytes += Int64(count)
        if endsFrame { statistics.frames += 1 }
        try service()
    }

    /// Processes finished writes without waiting, then `service`.
    package func poll() throws {
        try reap(waitNanoseconds: 0)
        try service()
    }

    /// Takes a free buffer for the next bytes. Only a frame larger than all buffers finds none
    /// free here (it was accepted when all were free): it waits for its earlier pieces to land.
    func startFilling(granted: Int64, until deadline: UInt64) throws {
        try waitUntil("a buffer to land", until: deadline) { ring.hasFreeSlot }
        try ring.startFilling(at: length, limit: granted - length)
    }

    func sealFilling() throws {
        let slot = ring.filling
        if let write = ring.sealFilling(now: Self.now()) {
            try issue(write)
        } else if let slot, ring.slots[slot].phase == .queuedBehindFlush {
            statistics.buffersQueuedBehindFlush += 1
        }
    }

    /// After each call: a due commit, progress for other processes, submission, invariants.
    func service() throws {
        try maybeCommit()
        try publishProgress()
        try engine.submit()
        try checkInvariants()
    }

    // MARK: Durability

    /// Starts a commit when the durability interval has passed and a frame arrived since the
    /// last one. When the stream is slow, the frames since the last commit still sit in the
    /// filling buffer: the commit first writes what that buffer holds (to the next block
    /// boundary), and the whole buffer is written again once it is full.
    /// `forced`: start one now if the pipeline is idle, due or not (a mounted file's fsync).
    func maybeCommit(forced: Bool = false) throws {
        let now = Self.now()
        guard forced ? commits.isIdle : commits.isDue(now: now) else { return }
        if ring.isIdle, let slot = ring.filling, ring.slots[slot].lastFrameEnd > commits.committed {
            let flush = try ring.beginFlush()
            try commits.startFlush(slot: slot, length: flush.length, candidate: ring.slots[slot].lastFrameEnd, now: now)
            try issue(flush)
        } else if ring.landedFrameEnd > commits.committed {
            try commits.startSync(candidate: ring.landedFrameEnd, now: now)
            try issueDataSync()
        }
    }

    /// Commits every byte appended and patched so far, now, until `deadline` (a mounted
    /// file's `fsync(2)`; see `Capture.commitAppended`).
    package func commitAppended(until deadline: UInt64) throws {
        let target = length
        while commits.committed < target {
            try waitUntil("the commit in flight", until: deadline) { commits.isIdle }
            guard commits.committed < target else { break }
            try maybeCommit(forced: true)
            try engine.submit()
            if commits.isIdle {
                // Nothing could start: the bytes are still being written.
                guard !ring.isIdle else {
                    throw WritePathViolation("nothing to commit with \(commits.committed) of \(target) bytes committed")
                }
                try waitUntil("the writes before the commit", until: deadline) { ring.isIdle }
            }
        }
        // A patch below the committed length was rewritten in place: a data sync of its own
        // makes it durable. (A patch of a buffer still filling reaches the disk with it.)
        if patchedSinceCommit {
            try waitUntil("the writes in flight", until: deadline) { ring.isIdle && commits.isIdle }
            let rc = calls.fdatasync(data.rawValue)
            if rc < 0 { throw ProVideoError.system("fdatasync", errno: -rc, path: data.path) }
            patchedSinceCommit = false
        }
    }

    /// Writes the last partial buffer (padded to the alignment), waits for every write, makes
    /// the whole length durable with a final commit through the engine, and shuts the engine
    /// down, all by `deadline` (`Capture.finish`).
    package func finish(until deadline: UInt64) throws {
        try sealFilling()
        try engine.submit()
        try waitUntil("the last writes", until: deadline) { ring.isIdle && commits.isIdle }
        // The final commit, through the engine like every other: a deadline bounds it.
        if length > commits.committed {
            try commits.startSync(candidate: length, now: Self.now())
            try issueDataSync()
            try engine.submit()
            try waitUntil("the final commit", until: deadline) { commits.isIdle }
        }
        try waitUntil("the last progress write", until: deadline) { outstanding == 0 }
    }

    /// Stops the engine once nothing is in flight, waiting at most until `deadline`.
    package func shutdown(until deadline: UInt64) {
        _ = engine.shutdown(waitNanoseconds: Int64(deadline - min(Self.now(), deadline)))
    }

    /// Writes the capture's length and counters (`CaptureCounters`) to `captures/<id>/progress`
    /// for other processes' remaining capacity and status, at most every `progressInterval`,
    /// when the length, commits or overruns changed: they see it move while frames arrive,
    /// whatever the disk does. The write is one aligned `O_DIRECT` block through the engine:
    /// a buffered write on this thread could be throttled by the kernel's dirty-page
    /// balancing (`balance_dirty_pages`) whenever a neighbour fills the page cache.
    func publishProgress() throws {
        let now = Self.now()
        let changed = length != published.length || statistics.commits != published.commits
            || statistics.overruns != published.overruns
        guard !progressInFlight, changed, now - published.at >= Self.progressInterval else { return }
        progressRecord.bytes.storeBytes(of: UInt64(length).littleEndian, toByteOffset: 0, as: UInt64.self)
        CaptureCounters.store(statistics, buffersInFlight: ring.inFlight, into: progressRecord.bytes)
        try issueWrite(.progress, fd: progress, from: UnsafeRawPointer(progressRecord.bytes.baseAddress!), length: alignment,
                       at: 0)
        progressInFlight = true
        published = (length, statistics.commits, statistics.overruns, now)
    }
}

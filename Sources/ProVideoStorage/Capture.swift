import Foundation
import Glibc

/// One recording being written into a pool. Start it with `Pool.startCapture(to:options:)`,
/// `append` frames, patch earlier bytes with `write(_:at:)`, then `finish()` (the recording
/// moves to its destination) or `cancel()`. Use it from one thread.
///
/// The capture writes into the pool's reserve itself (the reserve file is renamed into the
/// capture), so every write overwrites preallocated blocks: the write path never allocates
/// disk space or memory. Frames are copied into a fixed set of aligned buffers; a full buffer
/// is written with `O_DIRECT` at its offset while the next one fills.
public final class Capture {
    /// The absolute path the recording moves to on `finish()`.
    public let destination: String
    public let options: CaptureOptions
    /// Bytes appended so far: the recording's length.
    public private(set) var length: Int64 = 0
    public private(set) var statistics: CaptureStatistics

    private let pool: Pool
    private let journal: CaptureJournal
    private let busy: PoolLock
    private let data: FileDescriptor
    private let progress: FileDescriptor
    private let commit: FileDescriptor
    private let engine: WriteEngine
    private let alignment: Int
    private let capacity: Int64

    // Buffers, all allocated at start. Slot i holds file bytes [slotOffset[i], +slotLength[i]).
    private let memory: AlignedBuffer
    private let patchBuffer: AlignedBuffer
    private let commitRecord: AlignedBuffer
    private let slotSize: Int
    private var freeSlots: [Int]
    /// Slots written or being written, in submission (= file offset) order.
    private var inFlight: [Int]
    private var filling: Int?
    private var fillCount = 0
    private var slotOffset: [Int64]
    private var slotLength: [Int]
    /// Bytes of the slot confirmed on disk, always a multiple of `alignment`.
    private var slotDone: [Int]
    private var slotDoneFlag: [Bool]
    private var slotRetries: [Int]
    private var slotSubmittedAt: [UInt64]
    /// End offset of the last frame that ends inside the slot, or -1.
    private var slotLastFrameEnd: [Int64]

    /// The contiguous prefix of the file that is on disk.
    private var landed: Int64 = 0
    /// The end of the last frame inside `landed`: the longest length a commit can promise.
    private var landedFrameEnd: Int64 = 0
    private var committed: Int64 = 0
    private var commitStage = CommitStage.idle
    private var commitRetries = 0
    /// Which of the two commit records the next commit writes.
    private var commitSlot = 0
    /// Bytes of the filling buffer being flushed by a commit, and how many are on disk.
    private var flushLength = 0
    private var flushDone = 0
    /// End of the bytes a commit's flush wrote ahead of `landed` (progress for other processes).
    private var flushedEnd: Int64 = 0
    private var lastCommitStart: UInt64 = 0
    private var state = State.open

    /// A commit: (flushing the filling buffer's frames →) fdatasync → the commit record.
    private enum CommitStage { case idle, flushing(slot: Int, candidate: Int64), syncing(Int64), recording(Int64) }
    private enum State { case open, failed(ProVideoError), closed }

    private var syncTag: UInt64 { UInt64(slotOffset.count) }
    private var commitTag: UInt64 { UInt64(slotOffset.count + 1) }
    private var flushTag: UInt64 { UInt64(slotOffset.count + 2) }
    /// Completions that make no progress (0 bytes, less than one block, EAGAIN, EINTR) are
    /// retried this many times per write before the write is reported failed.
    static let maximumRetries = 32

    init(pool: Pool, journal: CaptureJournal, busy: PoolLock, data: FileDescriptor, options: CaptureOptions) throws {
        self.pool = pool
        self.journal = journal
        self.busy = busy
        self.data = data
        self.options = options
        self.destination = journal.destination
        let layout = pool.layout
        progress = try FileDescriptor.open(layout.captureProgress, O_RDWR | O_CREAT)
        commit = try FileDescriptor.open(layout.captureCommit, O_RDWR | O_CREAT | O_DSYNC)
        alignment = journal.alignment
        capacity = journal.capacityAtStart
        let storage = pool.configuration.storage
        slotSize = options.resolvedWriteSize(alignment: alignment, optimalIOSize: storage.device.optimalIOSize)
        let count = options.bufferCount(writeSize: slotSize)
        guard let memory = AlignedBuffer(length: slotSize * count, alignment: alignment),
              let patchBuffer = AlignedBuffer(length: slotSize, alignment: alignment),
              let commitRecord = AlignedBuffer(length: alignment, alignment: alignment)
        else {
            throw ProVideoError(.invalidArgument, "cannot allocate \(slotSize * count) bytes of capture buffers; "
                                + "lower the buffer budget")
        }
        // Touch every page now so the first frames do not fault memory in.
        memory.bytes.initializeMemory(as: UInt8.self, repeating: 0)
        self.memory = memory
        self.patchBuffer = patchBuffer
        self.commitRecord = commitRecord
        let size = slotSize
        let slots = (0..<count).map { UnsafeMutableRawBufferPointer(rebasing: memory.bytes[($0 * size)..<(($0 + 1) * size)]) }
        engine = try WriteEngineFactory.make(options.engine, buffers: slots, queueDepth: count + 3, calls: pool.calls)
        statistics = CaptureStatistics(engine: engine.name)
        freeSlots = Array((0..<count).reversed())
        inFlight = []
        inFlight.reserveCapacity(count)
        slotOffset = Array(repeating: 0, count: count)
        slotLength = Array(repeating: 0, count: count)
        slotDone = Array(repeating: 0, count: count)
        slotDoneFlag = Array(repeating: false, count: count)
        slotRetries = Array(repeating: 0, count: count)
        slotSubmittedAt = Array(repeating: 0, count: count)
        slotLastFrameEnd = Array(repeating: -1, count: count)
        lastCommitStart = Self.now()
        try publishProgress()
    }

    static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// Bytes the recording can still grow by.
    public var remainingCapacity: Int64 { capacity - length }

    /// Bytes a crash cannot lose: flushed and recorded as committed.
    public var committedLength: Int64 { committed }

    // MARK: Append and patch

    /// Appends one frame (any size, 1 byte to tens of MB). Returns once the bytes are copied
    /// into a buffer; waits for the disk only when every buffer is in flight (then per
    /// `options.overrunPolicy`). A frame is accepted whole or not at all; a frame larger than
    /// all buffers together is taken once they are all free, then copied as writes complete.
    /// - Throws: `.storageFull` when the frame does not fit in the reserve (the capture stays
    ///   open: `finish()` still produces the accepted bytes); `.overrun`; the capture's write
    ///   error (`.ioError`, `.notEnoughSpace`) once a write failed; `.captureClosed`.
    public func append(_ frame: UnsafeRawBufferPointer) throws {
        var copied = 0
        try append(count: frame.count) { piece in
            piece.copyMemory(from: UnsafeRawBufferPointer(rebasing: frame[copied..<copied + piece.count]))
            copied += piece.count
        }
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
    /// the first piece (`fill` is never called for a refused frame); a frame larger than all
    /// buffers is taken when they are free and filled as writes complete.
    /// - Parameter count: bytes in the frame; 0 counts an empty frame.
    /// - Throws: `.invalidArgument` for a negative `count`; otherwise as `append(_:)`
    ///   (`.storageFull`, `.overrun`, the capture's write error, `.captureClosed`).
    public func append(count: Int, filling fill: (UnsafeMutableRawBufferPointer) -> Void) throws {
        let started = Self.now()
        try checkOpen()
        guard count >= 0 else { throw ProVideoError(.invalidArgument, "a frame cannot have \(count) bytes") }
        guard Int64(count) <= capacity - length else {
            throw ProVideoError(.storageFull, "storage full: the pool's reserve has \(capacity - length) bytes left, "
                                + "the frame needs \(count); \(length) bytes were accepted and finish() keeps them",
                                path: destination)
        }
        try reap(waitNanoseconds: 0)
        // Room for the whole frame is found (or the overrun policy gives up) before any byte
        // is written, so a frame is accepted whole or not at all.
        let needed = min(count, mostSpaceInBuffers())
        if needed > spaceInBuffers() {
            statistics.overruns += 1
            try waitForSpace(needed, started: started)
        }
        var filled = 0
        while filled < count {
            let slot = try currentSlot()
            let n = min(slotLength[slot] - fillCount, count - filled)
            fill(UnsafeMutableRawBufferPointer(start: memory.bytes.baseAddress! + slot * slotSize + fillCount, count: n))
            fillCount += n
            filled += n
            length += Int64(n)
            if filled == count { slotLastFrameEnd[slot] = length }
            if fillCount == slotLength[slot] { try submitFilling(padded: slotLength[slot]) }
        }
        statistics.frames += 1
        statistics.bytes += Int64(count)
        try maybeCommit()
        try engine.submit()
        statistics.appendLatency.record(Self.now() - started)
    }

    /// Appends `frame`; see `append(_:)`.
    public func append(_ frame: [UInt8]) throws {
        try frame.withUnsafeBytes { try append($0) }
    }

    /// Rewrites bytes already appended, at any offset and length (a muxer patching sizes and
    /// headers). Bytes still in a buffer are patched in memory; bytes on disk are patched by
    /// reading and rewriting the aligned blocks around them, after the writes in flight land.
    /// - Throws: `.invalidArgument` when the range is not inside `[0, length)`; a write error.
    public func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws {
        try checkOpen()
        let end = offset + Int64(bytes.count)
        guard offset >= 0, end <= length else {
            throw ProVideoError(.invalidArgument, "cannot patch bytes \(offset)..<\(end): the recording has \(length) bytes")
        }
        statistics.patches += 1
        let buffered = filling.map { slotOffset[$0] } ?? length
        if end > buffered, let slot = filling {
            let from = max(offset, buffered)
            (memory.bytes.baseAddress! + slot * slotSize + Int(from - slotOffset[slot]))
                .copyMemory(from: bytes.baseAddress! + Int(from - offset), byteCount: Int(end - from))
        }
        guard offset < buffered else { return }
        try drain()
        let align = Int64(alignment)
        var block = offset / align * align
        let patchEnd = min(end, buffered)
        while block < patchEnd {
            let span = Int(min(Int64(slotSize), (patchEnd - block + align - 1) / align * align))
            let window = UnsafeMutableRawBufferPointer(rebasing: patchBuffer.bytes[0..<span])
            var read = 0
            while read < span {
                let n = try data.read(into: UnsafeMutableRawBufferPointer(rebasing: window[read...]), at: block + Int64(read), pool.calls)
                guard n > 0 else { throw ProVideoError(.ioError, "reading back \(data.path) ended early", path: data.path) }
                read += n
            }
            let from = max(offset, block), to = min(patchEnd, block + Int64(span))
            (window.baseAddress! + Int(from - block)).copyMemory(from: bytes.baseAddress! + Int(from - offset), byteCount: Int(to - from))
            try fail(on: { try data.writeAll(UnsafeRawBufferPointer(window), at: block, pool.calls) })
            block += Int64(span)
        }
    }

    /// Processes finished writes without waiting: publishes progress to other processes and
    /// starts a due durability commit. `append` does this too; call `poll` at least every
    /// `durabilityInterval` (and every second) while the recorder waits for input, so other
    /// processes see a live `remainingCapacity` and the last frames become durable.
    public func poll() throws {
        try checkOpen()
        try reap(waitNanoseconds: 0)
        try fail(on: { try maybeCommit() })
        try engine.submit()
    }

    // MARK: Finish and cancel

    /// Writes the last partial buffer (padded to the alignment), cuts the file to `length`,
    /// flushes it, moves it to `destination` (a rename on the pool's filesystem, else a
    /// verified copy), flushes the directory, returns the unused reserve to the pool and
    /// clears `capturing`.
    /// - Returns: where the recording is and its length in bytes.
    /// - Throws: `.destinationExists` (the recording is kept in the pool, see the error's
    ///   path); a write or move error. After a failed write, `provideo recover` salvages the
    ///   committed part.
    @discardableResult
    public func finish() throws -> RecordingResult {
        try checkOpen()
        if let slot = filling, fillCount > 0 {
            let padded = (fillCount + alignment - 1) / alignment * alignment
            (memory.bytes.baseAddress! + slot * slotSize + fillCount).initializeMemory(as: UInt8.self, repeating: 0, count: padded - fillCount)
            try submitFilling(padded: padded)
            try engine.submit()
        }
        try drain()
        try fail(on: {
            try data.sync(pool.calls)
            try recordCommit(length)
        })
        state = .closed
        defer { busy.release(.capturing) }
        let outcome = try pool.completeCapture(journal: journal, length: length)
        return RecordingResult(path: outcome.path, length: length, statistics: statistics)
    }

    /// Discards the recording and returns its capacity to the pool.
    /// - Throws: the capture's write error once a write failed (`provideo recover` then
    ///   salvages the committed bytes); `.captureClosed`.
    public func cancel() throws {
        try checkOpen()
        state = .closed
        try? drain()
        defer { busy.release(.capturing) }
        try pool.discardCapture()
    }

    // MARK: The write state machine

    private func checkOpen() throws {
        switch state {
        case .open: return
        case .failed(let error): throw error
        case .closed: throw ProVideoError(.captureClosed, "the capture has already ended")
        }
    }

    /// Marks the capture failed with the first error a write or flush raised, so every later
    /// call reports it; the committed bytes stay salvageable by `provideo recover`.
    private func fail<T>(on body: () throws -> T) throws -> T {
        do { return try body() } catch var error as ProVideoError {
            error.message += "; \(committed) bytes are committed and safe: `provideo recover` salvages them"
            state = .failed(error)
            // Let `recover` (or the next process to open the pool) salvage the capture now.
            busy.release(.capturing)
            throw error
        }
    }

    private func spaceInBuffers() -> Int {
        (filling.map { slotLength[$0] - fillCount } ?? 0) + freeSlots.count * slotSize
    }

    /// The room once every write in flight has landed: a larger frame is taken when there is
    /// this much and copied on as writes complete. The filling buffer's used part stays used.
    private func mostSpaceInBuffers() -> Int {
        (filling.map { slotLength[$0] - fillCount } ?? 0) + (slotLength.count - (filling == nil ? 0 : 1)) * slotSize
    }

    /// The slot being filled, taking a free one (waiting per policy) when none is.
    private func currentSlot() throws -> Int {
        if let slot = filling { return slot }
        // Only a frame larger than all buffers gets here with none free: it was accepted.
        while freeSlots.isEmpty { try reap(waitNanoseconds: nil) }
        let slot = freeSlots.removeLast()
        filling = slot
        fillCount = 0
        slotOffset[slot] = length
        slotLength[slot] = Int(min(Int64(slotSize), capacity - length))
        slotLastFrameEnd[slot] = -1
        return slot
    }

    private func waitForSpace(_ bytes: Int, started: UInt64) throws {
        let overrun = { (detail: String) -> ProVideoError in
            self.statistics.overrunFailures += 1
            return ProVideoError(.overrun, "overrun: every capture buffer is in flight (\(detail)); the frame was not "
                                 + "accepted. The disk is slower than the stream: raise the buffer budget or "
                                 + "lower the bitrate", path: self.destination)
        }
        guard case .wait(let limit) = options.overrunPolicy else { throw overrun("overrun policy: fail") }
        let deadline = started + limit
        while spaceInBuffers() < bytes {
            let now = Self.now()
            guard now < deadline else { throw overrun("waited \(limit / 1_000_000) ms") }
            try reap(waitNanoseconds: Int64(deadline - now))
        }
    }

    /// Queues the filling slot's first `padded` bytes as one write.
    private func submitFilling(padded: Int) throws {
        guard let slot = filling else { return }
        // Two writes to the same blocks in flight land in any order: let a commit's flush of
        // this buffer finish first.
        while case .flushing(slot, _) = commitStage { try reap(waitNanoseconds: nil) }
        slotLength[slot] = padded
        slotDone[slot] = 0
        slotDoneFlag[slot] = false
        slotRetries[slot] = 0
        inFlight.append(slot)
        filling = nil
        fillCount = 0
        slotSubmittedAt[slot] = Self.now()
        try queueRest(of: slot)
    }

    private func queueRest(of slot: Int) throws {
        let done = slotDone[slot]
        try engine.queueWrite(fd: data.rawValue, slot: slot, address: memory.bytes.baseAddress! + slot * slotSize + done,
                              length: slotLength[slot] - done, offset: slotOffset[slot] + Int64(done), tag: UInt64(slot))
    }

    /// Processes completions: the first waits up to `waitNanoseconds`, the rest only if ready.
    private func reap(waitNanoseconds: Int64?) throws {
        try engine.submit()
        var wait = waitNanoseconds
        while let completion = try fail(on: { try engine.nextCompletion(waitNanoseconds: wait) }) {
            wait = 0
            try fail(on: { try handle(completion) })
        }
        try engine.submit()
    }

    private func handle(_ completion: EngineCompletion) throws {
        let result = completion.result
        if completion.tag == syncTag || completion.tag == commitTag || completion.tag == flushTag {
            try handleCommitStage(completion.tag, result: result)
            return
        }
        let slot = Int(completion.tag)
        statistics.writeCompletions += 1
        let remaining = slotLength[slot] - slotDone[slot]
        if result == remaining {
            slotDoneFlag[slot] = true
            statistics.completionLatency.record(Self.now() - slotSubmittedAt[slot])
            try advanceLanded()
            return
        }
        if result < 0 && result != -EAGAIN && result != -EINTR {
            throw ProVideoError.system("write", errno: -result, path: data.path)
        }
        var progressed = false
        if result > 0 {
            // A short completion: resubmit from the last aligned boundary it reached, since an
            // O_DIRECT write must start aligned; the partial block is rewritten whole.
            statistics.shortWritesRetried += 1
            let done = (slotDone[slot] + Int(result)) / alignment * alignment
            progressed = done > slotDone[slot]
            slotDone[slot] = done
        }
        if !progressed {
            // 0 bytes, EAGAIN, EINTR, or a short write shorter than one block: bounded retries.
            slotRetries[slot] += 1
            guard slotRetries[slot] <= Self.maximumRetries else {
                throw ProVideoError(.ioError, "a write of \(remaining) bytes at offset \(slotOffset[slot] + Int64(slotDone[slot])) "
                                    + "made no progress after \(Self.maximumRetries) retries (last result \(result))",
                                    path: data.path)
            }
        }
        try queueRest(of: slot)
    }

    /// Moves `landed` over every slot at the head of `inFlight` that is on disk, frees them,
    /// and publishes the new value for `remainingCapacity` in other processes.
    private func advanceLanded() throws {
        var moved = false
        while let head = inFlight.first, slotDoneFlag[head] {
            inFlight.removeFirst()
            landed = slotOffset[head] + Int64(slotLength[head])
            if slotLastFrameEnd[head] >= 0 { landedFrameEnd = slotLastFrameEnd[head] }
            freeSlots.append(head)
            moved = true
        }
        if moved { try publishProgress() }
    }

    private func publishProgress() throws {
        var value = min(max(landed, flushedEnd), length).littleEndian
        try withUnsafeBytes(of: &value) { try progress.writeAll($0, at: 0, .live) }
    }

    /// Starts a commit when the durability interval has passed and a frame arrived since the
    /// last one: fdatasync of the data, then (on its completion) the commit record. When the
    /// stream is slow, the frames since the last commit still sit in the filling buffer; the
    /// commit then first writes what that buffer holds (up to the next block boundary), and
    /// the whole buffer is written again once it is full.
    private func maybeCommit() throws {
        guard case .idle = commitStage, Self.now() - lastCommitStart >= options.durabilityInterval else { return }
        if inFlight.isEmpty, let slot = filling, slotLastFrameEnd[slot] > committed {
            lastCommitStart = Self.now()
            flushLength = (fillCount + alignment - 1) / alignment * alignment
            flushDone = 0
            commitRetries = 0
            commitStage = .flushing(slot: slot, candidate: slotLastFrameEnd[slot])
            try queueFlush(slot)
        } else if landedFrameEnd > committed {
            lastCommitStart = Self.now()
            commitStage = .syncing(landedFrameEnd)
            try engine.queueDataSync(fd: data.rawValue, tag: syncTag)
        }
    }

    private func queueFlush(_ slot: Int) throws {
        try engine.queueWrite(fd: data.rawValue, slot: slot, address: memory.bytes.baseAddress! + slot * slotSize + flushDone,
                              length: flushLength - flushDone, offset: slotOffset[slot] + Int64(flushDone), tag: flushTag)
    }

    private func handleCommitStage(_ tag: UInt64, result: Int32) throws {
        if case .flushing(let slot, let candidate) = commitStage, tag == flushTag {
            if result == flushLength - flushDone {
                flushedEnd = candidate
                try publishProgress()
                commitStage = .syncing(candidate)
                try engine.queueDataSync(fd: data.rawValue, tag: syncTag)
                return
            }
            if result < 0 && result != -EAGAIN && result != -EINTR {
                throw ProVideoError.system("write", errno: -result, path: data.path)
            }
            let done = result > 0 ? (flushDone + Int(result)) / alignment * alignment : flushDone
            if done == flushDone { commitRetries += 1 }
            guard commitRetries <= Self.maximumRetries else {
                throw ProVideoError(.ioError, "flushing \(flushLength) bytes at offset \(slotOffset[slot]) made no progress "
                                    + "after \(Self.maximumRetries) retries (last result \(result))", path: data.path)
            }
            flushDone = done
            try queueFlush(slot)
            return
        }
        if result < 0 { throw ProVideoError.system(tag == syncTag ? "fdatasync" : "write", errno: -result, path: data.path) }
        switch commitStage {
        case .syncing(let candidate):
            CaptureJournal.commitRecord(candidate, into: commitRecord.bytes)
            commitStage = .recording(candidate)
            try queueCommitRecord()
        case .recording(let candidate):
            guard result == 16 else {
                // Short or zero: rewrite the whole 16-byte record (it fits in one sector).
                commitRetries += 1
                guard commitRetries <= Self.maximumRetries else {
                    throw ProVideoError(.ioError, "the commit record write returned \(result) bytes of 16, "
                                        + "\(Self.maximumRetries) times", path: commit.path)
                }
                try queueCommitRecord()
                return
            }
            commitRetries = 0
            commitSlot ^= 1
            committed = candidate
            statistics.commits += 1
            commitStage = .idle
        case .idle, .flushing:
            break
        }
    }

    /// Queues the 16-byte commit record (already in `commitRecord`) to the slot's turn.
    private func queueCommitRecord() throws {
        try engine.queueWrite(fd: commit.rawValue, slot: -1, address: commitRecord.bytes.baseAddress!, length: 16,
                              offset: CaptureJournal.commitSlots[commitSlot], tag: commitTag)
    }

    /// Waits until every write and commit in flight has completed.
    private func drain() throws {
        try engine.submit()
        while !inFlight.isEmpty || !isCommitIdle { try reap(waitNanoseconds: nil) }
    }

    private var isCommitIdle: Bool {
        if case .idle = commitStage { return true }
        return false
    }

    /// Records `length` as committed, synchronously (finish, after the final fdatasync).
    private func recordCommit(_ length: Int64) throws {
        CaptureJournal.commitRecord(length, into: commitRecord.bytes)
        try commit.writeAll(UnsafeRawBufferPointer(rebasing: commitRecord.bytes[0..<16]),
                            at: CaptureJournal.commitSlots[commitSlot], .live)
        commitSlot ^= 1
        committed = length
    }
}

/// A finished recording.
public struct RecordingResult: Sendable {
    /// Where the recording is: the destination, or a place in the pool when the destination
    /// could not take it.
    public var path: String
    /// Its length in bytes.
    public var length: Int64
    public var statistics: CaptureStatistics
}

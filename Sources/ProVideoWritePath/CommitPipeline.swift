import ProVideoSystem
import ProVideoJournal

/// A durability commit, one at a time: the length it promises is made durable by
///
///     idle ──▶ (flushing: the filling buffer's frames written) ──▶ syncing: fdatasync(2)
///          ──▶ recording: the 16-byte commit record (O_DSYNC) ──▶ idle, `committed` moves on
///
/// The record is written only after the data sync completed, so a power cut never leaves a
/// record that vouches for bytes not on disk. Pure state: the capture issues the requests.
struct CommitPipeline {
    enum Stage: Equatable {
        case idle
        /// The frames of buffer `slot`, up to `candidate`, are being written.
        case flushing(slot: Int, candidate: Int64)
        case syncing(candidate: Int64)
        case recording(candidate: Int64)
    }

    private(set) var stage = Stage.idle
    /// The longest length a crash cannot lose: its record is on disk.
    private(set) var committed: Int64 = 0
    /// The highest frame end a flush wrote (ahead of the ring's `landed`).
    private(set) var flushedFrameEnd: Int64 = 0
    /// The flush write in progress.
    private(set) var flush = WriteProgress(length: 0)
    /// Which of the two commit records the next commit writes (`CaptureJournal.commitSlots`).
    private(set) var recordIndex = 0
    private var record = WriteProgress(length: CaptureJournal.commitRecordLength)
    private var lastStart: UInt64
    /// Nanoseconds between the starts of two commits.
    let interval: UInt64

    init(interval: UInt64, now: UInt64) {
        self.interval = interval
        lastStart = now
    }

    var isIdle: Bool { stage == .idle }

    func isDue(now: UInt64) -> Bool { isIdle && now - lastStart >= interval }

    mutating func startFlush(slot: Int, length: Int, candidate: Int64, now: UInt64) throws {
        try checkStart(candidate)
        lastStart = now
        flush = WriteProgress(length: length)
        stage = .flushing(slot: slot, candidate: candidate)
    }

    mutating func startSync(candidate: Int64, now: UInt64) throws {
        try checkStart(candidate)
        lastStart = now
        stage = .syncing(candidate: candidate)
    }

    /// A commit starts only from idle, and only to promise more than is committed.
    private func checkStart(_ candidate: Int64) throws {
        guard isIdle, candidate > committed else {
            throw WritePathViolation("a commit of \(candidate) bytes started in \(stage) with \(committed) committed")
        }
    }

    /// Applies the flush write's completion.
    /// - Returns: true when the flush landed (the stage is now `syncing`); false: resubmit
    ///   from `flush.done`.
    mutating func flushCompleted(_ result: Int32, alignment: Int, path: String) throws -> Bool {
        guard case .flushing(_, let candidate) = stage else { throw WritePathViolation("a flush completed in \(stage)") }
        guard try flush.apply(result, alignment: alignment, call: "write", path: path) else { return false }
        flushedFrameEnd = candidate
        stage = .syncing(candidate: candidate)
        return true
    }

    /// Applies the data sync's completion; the stage is then `recording`.
    /// - Returns: the length the commit record must hold.
    mutating func syncCompleted(_ result: Int32, path: String) throws -> Int64 {
        guard case .syncing(let candidate) = stage else { throw WritePathViolation("a data sync completed in \(stage)") }
        if result < 0 { throw ProVideoError.system("fdatasync", errno: -result, path: path) }
        record = WriteProgress(length: CaptureJournal.commitRecordLength)
        stage = .recording(candidate: candidate)
        return candidate
    }

    /// Applies the commit record's completion. A short record is rewritten whole (it fits in
    /// one sector).
    /// - Returns: true when the commit is done; false: write the record again.
    mutating func recordCompleted(_ result: Int32, path: String) throws -> Bool {
        guard case .recording(let candidate) = stage else { throw WritePathViolation("a commit record completed in \(stage)") }
        let whole = CaptureJournal.commitRecordLength
        guard try record.apply(result, alignment: whole, call: "commit record write", path: path) else { return false }
        recorded(candidate)
        stage = .idle
        return true
    }

    /// Counts a record of `length` as on disk.
    private mutating func recorded(_ length: Int64) {
        committed = length
        recordIndex ^= 1
    }

    /// The first broken rule for `landedFrameEnd` (the ring's), or nil: a commit never
    /// promises more than the frames on disk.
    func violation(landedFrameEnd: Int64, alignment: Int) -> String? {
        let bound = max(landedFrameEnd, flushedFrameEnd)
        if committed > bound { return "committed \(committed) is past the last frame on disk (\(bound))" }
        if flush.done % alignment != 0 && !flush.isComplete { return "the flush has \(flush.done) bytes done, unaligned" }
        return nil
    }
}

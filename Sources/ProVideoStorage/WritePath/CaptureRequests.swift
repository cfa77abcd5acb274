import Glibc
import ProVideoSystem
import ProVideoJournal

/// The capture's side of the engine: every request is issued and every completion handled
/// here, and every call that can fail runs inside `guarded`, the one place that fails the
/// capture.
extension Capture {
    // MARK: Failure

    /// Runs `body`; its first error fails the capture: the state keeps the error (every later
    /// call throws it at once), every request still in the engine is cancelled and waited for,
    /// and only then is `capturing` released, so that `provideo recover` in another process
    /// never sees a write of this capture land.
    func guarded<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch {
            var failure = (error as? WritePathViolation).map { violated($0.problem) }
                ?? error as? ProVideoError ?? ProVideoError(.ioError, "\(error)", path: data.path)
            failure.message += "; \(commits.committed) bytes are committed and safe: `provideo recover` salvages them"
            if stopRequests() {
                _ = granter.stop()
                claim.release()
            } else {
                failure.message += "; \(outstanding) writes did not complete within \(Self.stallLimit / 1_000_000_000) s, "
                    + "so the pool stays busy until this process exits"
            }
            state = .failed(failure)
            throw failure
        }
    }

    /// Cancels every outstanding request and waits, at most `stallLimit`, until each has
    /// completed; then stops the engine.
    /// - Returns: false when requests were still outstanding at the deadline.
    func stopRequests() -> Bool {
        let deadline = Self.now() + Self.stallLimit
        if outstanding > 0 { try? engine.cancelAll(tag: CompletionTag.cancel.rawValue) }
        while outstanding > 0 {
            let now = Self.now()
            guard now < deadline else { return false }
            do {
                if let completion = try engine.nextCompletion(waitNanoseconds: Int64(deadline - now)),
                   completion.tag != CompletionTag.cancel.rawValue {
                    outstanding -= 1
                }
            } catch {
                MonotonicTime.sleep(microseconds: 1_000)  // The engine failed to reap; its requests still complete.
            }
        }
        return engine.shutdown(waitNanoseconds: Int64(deadline - min(Self.now(), deadline)))
    }

    /// Waits until `condition` holds, processing completions, until `deadline` (the calling
    /// public method's: `stallLimit` after it began, so its waits together stay within it).
    /// - Throws: `.ioError` at the deadline; a completion's error.
    func waitUntil(_ what: String, until deadline: UInt64, _ condition: () -> Bool) throws {
        while !condition() {
            guard outstanding > 0 else { throw violated("waiting for \(what) with no request in flight") }
            let now = Self.now()
            guard now < deadline else {
                throw ProVideoError(.ioError, "\(what) did not come within \(Self.stallLimit / 1_000_000_000) s: "
                                    + "\(outstanding) requests are still not done; the device is not responding",
                                    path: data.path)
            }
            try reap(waitNanoseconds: Int64(deadline - now))
        }
    }

    // MARK: The append path

    /// Makes room for `bytes` in the buffers, waiting per the overrun policy when every
    /// buffer is in flight. - Returns: false when the policy gave up.
    func makeRoom(for bytes: Int, started: UInt64) throws -> Bool {
        try reap(waitNanoseconds: 0)
        guard ring.space < bytes else { return true }
        statistics.overruns += 1
        guard let deadline = options.overrunPolicy.deadline(from: started) else { return false }
        while ring.space < bytes {
            let now = Self.now()
            guard now < deadline else { return false }
            try reap(waitNanoseconds: Int64(deadline - now))
        }
        return true
    }

    /// Takes a free buffer for the next bytes. Only a frame larger than all buffers finds none
    /// free here (it was accepted when all were free): it waits for its earlier pieces to land.
    func startFilling(until deadline: UInt64) throws {
        try waitUntil("a buffer to land", until: deadline) { ring.hasFreeSlot }
        try ring.startFilling(at: length, limit: capacity - length)
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

    // MARK: Requests and completions

    func issue(_ write: BufferRing.Write) throws {
        try issueWrite(write.tag, fd: data, from: write.address, length: write.length, at: write.offset, slot: write.slot)
    }

    /// Queues a write; `slot` is the capture buffer `address` lies in (a registered buffer),
    /// or -1 for the small records outside them.
    private func issueWrite(_ tag: CompletionTag, fd: FileDescriptor, from address: UnsafeRawPointer, length: Int,
                            at offset: Int64, slot: Int = -1) throws {
        try engine.queueWrite(fd: fd.rawValue, slot: slot, address: address, length: length, offset: offset, tag: tag.rawValue)
        outstanding += 1
    }

    func issueDataSync() throws {
        try engine.queueDataSync(fd: data.rawValue, tag: CompletionTag.dataSync.rawValue)
        outstanding += 1
    }

    /// Queues the commit record (already in `commitRecord`) to its slot's turn.
    func issueRecord() throws {
        try issueWrite(.commitRecord, fd: commitFile, from: UnsafeRawPointer(commitRecord.bytes.baseAddress!),
                       length: CaptureJournal.commitRecordLength, at: CaptureJournal.commitSlots[commits.recordIndex])
    }

    /// Processes completions: the first waits up to `waitNanoseconds`, the rest only if ready.
    func reap(waitNanoseconds: Int64) throws {
        try engine.submit()
        var wait = waitNanoseconds
        while let completion = try engine.nextCompletion(waitNanoseconds: wait) {
            wait = 0
            try handle(completion)
            try checkInvariants()
        }
        try engine.submit()
    }

    private func handle(_ completion: EngineCompletion) throws {
        guard let tag = CompletionTag(rawValue: completion.tag), tag.isValid(slots: ring.slots.count) else {
            throw violated("a completion carries the unknown tag \(completion.tag)")
        }
        if tag == .cancel { return }
        outstanding -= 1
        let result = completion.result
        let retry = Self.noSpaceRetryIndex(tag, slots: ring.slots.count)
        // Only writes are made again. A failed fdatasync(2) may have dropped the dirty pages
        // it failed to write ("fsyncgate", PostgreSQL 2018), so a later success proves nothing:
        // its error fails the commit and the capture, whatever the errno.
        if result == -ENOSPC, let retry, noSpaceRetries[retry] < WriteProgress.maximumRetries {
            // btrfs reserves metadata even to write into preallocated NOCOW blocks, so once a
            // neighbour fills the filesystem a write can fail with ENOSPC (ext4 and XFS write
            // there without allocating). Nothing was written: the spare gives its blocks back
            // (once) and the same request is made again. Requests in flight together each
            // reserve their worst case, so one may still fail while the others hold theirs: it
            // is made again as they complete, up to `WriteProgress.maximumRetries` times for
            // that request; then its ENOSPC is the capture's `.notEnoughSpace`.
            if host.spare?.release(host.calls) == true { statistics.spareReleases += 1 }
            noSpaceRetries[retry] += 1
            return try reissue(tag)
        }
        if result >= 0, let retry { noSpaceRetries[retry] = 0 }
        switch tag {
        case .slotWrite(let slot):
            statistics.writeCompletions += 1
            if let rest = try ring.completeWrite(slot, result: result, path: data.path) {
                if result > 0 { statistics.shortWritesRetried += 1 }
                try issue(rest)
            } else {
                statistics.completionLatency.record(Self.now() - ring.slots[slot].submittedAt)
            }
        case .flush(let slot):
            guard try commits.flushCompleted(result, alignment: alignment, path: data.path) else {
                try issue(ring.flushWrite(slot, progress: commits.flush))
                return
            }
            if let write = try ring.flushLanded(slot, now: Self.now()) { try issue(write) }
            try issueDataSync()
        case .dataSync:
            // Cancelled with the thread that submitted it (see `WriteProgress.apply`): again.
            if result == -ECANCELED { return try issueDataSync() }
            CaptureJournal.commitRecord(try commits.syncCompleted(result, path: data.path), into: commitRecord.bytes)
            try issueRecord()
        case .commitRecord:
            if try commits.recordCompleted(result, path: commitFile.path) {
                statistics.commits += 1
            } else {
                try issueRecord()
            }
        case .progress:
            progressInFlight = false
            // A short write leaves the old value readable; the next publish writes it again.
            // So does ENOSPC (btrfs, above): other processes see a stale length meanwhile,
            // never a wrong one, and the recording does not stop for it.
            if result < 0 && result != -ECANCELED && result != -ENOSPC {
                throw ProVideoError.system("write", errno: -result, path: progress.path)
            }
        case .cancel:
            break
        }
    }

    /// Where a write request's ENOSPC retries are counted in `noSpaceRetries`; nil for the
    /// requests that are never made again after ENOSPC (the data sync, the progress write).
    static func noSpaceRetryIndex(_ tag: CompletionTag, slots: Int) -> Int? {
        switch tag {
        case .slotWrite(let slot): slot
        case .flush(let slot): slots + slot
        case .commitRecord: 2 * slots
        case .dataSync, .progress, .cancel: nil
        }
    }

    /// Makes the request `tag` again, from where it stands (a completion that failed before
    /// writing anything leaves its progress as it was).
    private func reissue(_ tag: CompletionTag) throws {
        switch tag {
        case .slotWrite(let slot): try issue(ring.rest(of: slot))
        case .flush(let slot): try issue(ring.flushWrite(slot, progress: commits.flush))
        case .commitRecord: try issueRecord()
        case .dataSync, .progress, .cancel: break
        }
    }

    // MARK: Invariants

    /// Checks the write path's rules after every state change, in every build (a walk over the
    /// buffers: negligible beside a write). A broken rule fails the capture.
    func checkInvariants() throws {
        let problem = ring.violation(length: length)
            ?? commits.violation(landedFrameEnd: ring.landedFrameEnd, alignment: alignment)
            ?? flushPairing()
        if let problem { throw violated(problem) }
    }

    /// A commit's flush and the buffer it writes agree, so a buffer never has its flush and its
    /// own write in flight together (two writes to the same blocks land in any order).
    private func flushPairing() -> String? {
        for (index, slot) in ring.slots.enumerated() {
            let flushing = slot.phase == .flushing || slot.phase == .queuedBehindFlush
            var pipelineFlushes = false
            if case .flushing(index, _) = commits.stage { pipelineFlushes = true }
            if flushing != pipelineFlushes {
                return "buffer \(index) is \(slot.phase) while the commit pipeline is \(commits.stage)"
            }
        }
        return nil
    }

    func violated(_ problem: String) -> ProVideoError {
        ProVideoError(.invariantViolated, "the write path broke its own rule: \(problem). The capture stopped; "
                      + "please report this", path: data.path)
    }
}

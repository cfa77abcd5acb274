import Glibc
import ProVideoSystem
import ProVideoJournal

/// The writer's side of the engine: every request is issued and every completion handled
/// here; the capture fails on the first error (`failure(from:)`, then `stopRequests`).
extension CaptureWriter {
    // MARK: Failure

    /// The capture's error for `error`, the first a call of this writer threw: a broken rule
    /// of the write path is `.invariantViolated`; what was committed is said (the capture adds
    /// the recovery that salvages it). The capture then stops the requests (`stopRequests`).
    package func failure(from error: Error) -> ProVideoError {
        var failure = (error as? WritePathViolation).map { violated($0.problem) }
            ?? error as? ProVideoError ?? ProVideoError(.ioError, "\(error)", path: data.path)
        failure.message += "; \(commits.committed) bytes are committed and safe"
        return failure
    }

    /// Cancels every outstanding request and waits, at most `stallLimit`, until each has
    /// completed; then stops the engine.
    /// - Returns: false when requests were still outstanding at the deadline.
    package func stopRequests() -> Bool {
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

    // MARK: Requests and completions

    func issue(_ write: BufferRing.Write) throws {
        try issueWrite(write.tag, fd: data, from: write.address, length: write.length, at: write.offset, slot: write.slot)
    }

    /// Queues a write; `slot` is the capture buffer `address` lies in (a registered buffer),
    /// or -1 for the small records outside them.
    func issueWrite(_ tag: CompletionTag, fd: FileDescriptor, from address: UnsafeRawPointer, length: Int,
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
            if releaseSpare() { statistics.spareReleases += 1 }
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

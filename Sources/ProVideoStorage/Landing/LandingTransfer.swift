import FoundationEssentials
import Glibc
import ProVideoSystem

/// Lands one held recording at its destination on another filesystem: copies it chunk by
/// chunk to a hidden temporary file beside the destination, hashing each chunk as it is read
/// from the pool (the pool's copy is read once), flushes each chunk and records it
/// (`LandingRecord`) so a killed transfer resumes at the last flushed chunk, reads what landed
/// back and compares it with those checksums, then publishes it without clobbering
/// (`NoClobberPublish`). Only then does `afterPublish` delete the pool's copy.
///
/// A transfer holds an OFD lock on the pool's copy: two `provideo land` processes never land
/// the same recording at once, and a killed one lets go with its last file descriptor. Run by
/// root (the landing service), it acts at the destination as the recording's owner
/// (`ThreadIdentity`), on the transfer's own thread.
struct LandingTransfer: Sendable {
    let held: HeldRecording
    let calls: SystemCalls
    let access: PoolAccess
    /// Cap in bytes per second, asked again at every read (a fleet's share changes as other
    /// servers' transfers start and end, `FleetSlots.share`); nil for none.
    let rate: @Sendable () -> Int64?
    /// The first wait after a failure, in seconds (`LandingRecord.backoff`).
    let retryAfter: Double
    /// Checked between reads; true ends the transfer with `Stopped` (it resumes later).
    let shouldStop: @Sendable () -> Bool
    /// Gets the bytes copied (from where a resumed transfer starts) and read back, of the
    /// take's length; its cancellation is not used (`shouldStop` is).
    var control: OperationControl = .none

    /// The transfer was asked to stop (a signal); it resumes where it stopped.
    struct Stopped: Error {}

    /// - Returns: the destination.
    /// - Throws: `.busy` when another process is landing it; `Stopped`; `.destinationExists`
    ///   when another file has the destination's name (never replaced); a read, write, flush,
    ///   verification (`.ioError`) or publish error. Every failure but `busy` and `Stopped` is
    ///   counted in the record with its back-off; the pool's copy stays.
    func run(afterPublish: () throws -> Void) throws -> String {
        let source = try FileDescriptor.open(held.path, O_RDWR)
        guard try source.lock(0, 1, wait: false) else {
            throw ProVideoError(.busy, "another process is landing \(held.path)", path: held.path)
        }
        var record = LandingRecord.load(forHeld: held.path)
        do {
            let length = try Pool.checkedLength(of: source, note: held)
            try land(source, length: length, &record)
            try afterPublish()
            return held.destination
        } catch let stop as Stopped {
            throw stop
        } catch {
            record.attempts += 1
            record.lastError = (error as? ProVideoError)?.message ?? "\(error)"
            let backoff = LandingRecord.backoff(attempts: record.attempts, base: retryAfter)
            record.nextAttemptAt = Date().timeIntervalSince1970 + backoff
            if let unrecorded = record.saveFailure(forHeld: held.path, calls, access: access) {
                var reported = error as? ProVideoError ?? ProVideoError(.ioError, "\(error)", path: held.path)
                reported.message += "; and this failure could not be recorded beside the take (\(unrecorded)): this "
                    + "process still waits \(Int(backoff)) s before the next attempt, but the pool's listing cannot show it"
                throw reported
            }
            throw error
        }
    }

    private func chunks(_ length: Int64) -> Int { Int((length + LandingRecord.chunk - 1) / LandingRecord.chunk) }

    private func land(_ source: FileDescriptor, length: Int64, _ record: inout LandingRecord) throws {
        guard held.destination.hasPrefix("/") else {
            throw ProVideoError(.corruptState, "\(held.path).json names no absolute destination", path: held.path,
                                remedies: [.move])
        }
        let name = FileSystem.lastComponent(of: held.destination)
        let temporary = RecordingCopy.temporaryName(for: name, tag: FileSystem.lastComponent(of: held.path))
        // Every step at the destination runs as the recording's owner (the recorder's user),
        // in its directory resolved once as that owner: root lands only where that user could
        // write, and the landed file is theirs. The pool's own files stay root's business.
        let owner = try RecordingOwner.of(source)
        let directory = try owner.acting { try DirectoryHandle.open(FileSystem.parent(of: held.destination)) }
        if let landed = directory.facts(of: name) {
            // Published before a kill, the pool's copy not yet deleted; or someone else's file.
            guard record.digests.count == chunks(length), landed.mode & UInt32(S_IFMT) == UInt32(S_IFREG),
                  let existing = try? owner.acting({ try directory.open(name, O_RDONLY | O_NONBLOCK) }),
                  try holdsLanded(existing, length: length, record) else {
                throw RecordingMove.destinationExists(held.destination)
            }
            // A link-then-unlink publish killed between its two steps leaves the temporary name.
            try owner.acting { if directory.holds(temporary, landed) { try directory.remove(temporary) } }
            return
        }
        let target = try owner.acting { try resumable(temporary, in: directory, owner: owner, length: length, &record) }
        try copy(source, length: length, to: target, &record)
        let synced = calls.fsync(target.rawValue)
        if synced < 0 { throw ProVideoError.system("fsync", errno: -synced, path: directory.display(temporary)) }
        guard try holdsLanded(target, length: length, record) else {
            record.landed = 0
            record.digests = []
            try record.save(forHeld: held.path, calls, access: access)
            throw ProVideoError(.ioError, "the copy at \(directory.display(temporary)) differs from the recording (SHA-256 "
                                + "of a chunk); the next attempt copies it again", path: directory.display(temporary))
        }
        _ = try owner.acting { try NoClobberPublish(calls: calls).publish(target, from: temporary, as: name, in: directory) }
    }

    /// The temporary a killed transfer left, when it may be resumed: a regular file with one
    /// link, owned by the recording's owner, whose recorded chunks still hold their checksums
    /// (Postfix's `safe_open` rule). Anything else at that name (a link, a hard link to another
    /// file, a file someone changed) is removed and a new one is created exclusively.
    private func resumable(_ temporary: String, in directory: DirectoryHandle, owner: RecordingOwner, length: Int64,
                           _ record: inout LandingRecord) throws -> FileDescriptor {
        if let facts = directory.facts(of: temporary), facts.mode & UInt32(S_IFMT) == UInt32(S_IFREG), facts.linkCount == 1,
           facts.uid == owner.uid || !ProcessIdentity.isRoot,
           let existing = try? directory.open(temporary, O_RDWR | O_NONBLOCK), let opened = try? existing.facts(),
           opened.inode == facts.inode, opened.linkCount == 1, try holdsRecordedChunks(existing, length: length, record) {
            return existing
        }
        record.landed = 0
        record.digests = []
        try directory.remove(temporary)
        return try directory.open(temporary, O_RDWR | O_CREAT | O_EXCL, mode: 0o666)
    }

    /// Whether `file` holds each chunk `record` says landed (those it holds in full).
    private func holdsRecordedChunks(_ file: FileDescriptor, length: Int64, _ record: LandingRecord) throws -> Bool {
        let size = Int64(try file.facts().size)
        for (index, expected) in record.digests.enumerated() {
            let start = Int64(index) * LandingRecord.chunk, end = min(start + LandingRecord.chunk, length)
            guard end <= size else { break }
            if try chunkDigest(file, from: start, to: end) != expected { return false }
        }
        return true
    }

    private func chunkDigest(_ file: FileDescriptor, from start: Int64, to end: Int64) throws -> String {
        let hash = try SHA256()
        try RecordingCopy.read(file, from: start, to: end, calls: calls, control: .none) { hash.update($0) }
        return Self.hex(hash.finish())
    }

    /// Copies from the first chunk not yet flushed at the destination to the end, recording
    /// each chunk once flushed.
    private func copy(_ source: FileDescriptor, length: Int64, to target: FileDescriptor, _ record: inout LandingRecord) throws {
        let chunk = LandingRecord.chunk
        let existing = Int64(try target.facts().size)
        // Only chunks both recorded and present count (a destination may have lost what was
        // not flushed when it went away).
        let kept = record.landed >= length && existing >= length ? chunks(length) : Int(min(record.landed, existing) / chunk)
        record.digests = Array(record.digests.prefix(kept))
        var offset = min(Int64(kept) * chunk, length)
        record.landed = offset
        if existing > length { try target.truncate(length, calls) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        // The cap's pacing starts again whenever the cap changes; the rate shown is over the
        // whole attempt.
        var paced = Paced(rate: nil, sent: 0, started: MonotonicTime.now())
        let attemptStarted = paced.started
        var sent: Int64 = 0
        control.report(.copying, offset, length)
        while offset < length {
            let end = min(offset + chunk, length)
            let hash = try SHA256()
            var at = offset
            while at < end {
                if shouldStop() { throw Stopped() }
                let want = Int(min(Int64(buffer.count), end - at))
                let n = try buffer.withUnsafeMutableBytes {
                    try source.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<want]), at: at, calls)
                }
                guard n > 0 else {
                    throw ProVideoError(.ioError, "\(held.path) ended at \(at) of \(length) bytes", path: held.path)
                }
                try buffer.withUnsafeBytes {
                    let piece = UnsafeRawBufferPointer(rebasing: $0[0..<n])
                    hash.update(piece)
                    try target.writeAll(piece, at: at, calls)
                }
                at += Int64(n)
                sent += Int64(n)
                control.report(.copying, at, length)
                throttle(Int64(n), &paced)
            }
            try target.sync(calls)
            source.dropCachedPages(offset: offset, length: end - offset)
            target.dropCachedPages(offset: offset, length: end - offset)
            record.landed = end
            record.digests.append(Self.hex(hash.finish()))
            // Sustained since the attempt started, not over this chunk: under `rate` a chunk after
            // a slow flush runs at full speed to catch up (207 MiB/s shown for 50 MB/s), and the
            // time left would be a fraction of the real one.
            record.bytesPerSecond = Double(sent) * 1e9 / Double(max(MonotonicTime.now() - attemptStarted, 1))
            try record.save(forHeld: held.path, calls, access: access)
            offset = end
        }
    }

    /// Whether `file` holds the recording's length and, chunk by chunk, the checksums taken
    /// while reading the pool's copy. Its cached pages are dropped first, so what is compared
    /// comes from the filesystem, not from this process's writes still in memory.
    private func holdsLanded(_ file: FileDescriptor, length: Int64, _ record: LandingRecord) throws -> Bool {
        guard Int64(try file.facts().size) == length, record.digests.count == chunks(length) else { return false }
        file.dropCachedPages(offset: 0, length: length)
        for (index, expected) in record.digests.enumerated() {
            let start = Int64(index) * LandingRecord.chunk, end = min(start + LandingRecord.chunk, length)
            if try chunkDigest(file, from: start, to: end) != expected { return false }
            control.report(.verifying, end, length)
        }
        return true
    }

    /// Where the cap's pacing stands: the cap it paces to, bytes sent under it, since when.
    struct Paced {
        var rate: Int64?
        var sent: Int64
        var started: UInt64
    }

    /// Sleeps until the bytes sent under the current cap are due since `paced.started`. A
    /// transfer held up (a slow flush of the destination) keeps at most `burstSeconds` of
    /// credit: `started` moves up, so that it never catches up at full speed, past the cap, on
    /// the captures' disk. A new cap starts the pacing again from now: bytes sent under a
    /// larger share are not owed again under a smaller one.
    private func throttle(_ bytes: Int64, _ paced: inout Paced) {
        let cap = rate()
        if cap != paced.rate { paced = Paced(rate: cap, sent: 0, started: MonotonicTime.now()) }
        guard let cap, cap > 0 else { return }
        paced.sent += bytes
        let pace = Self.pace(sent: paced.sent, rate: cap, started: paced.started, now: MonotonicTime.now())
        paced.started = pace.started
        if pace.sleep > 0 { MonotonicTime.sleep(microseconds: UInt32(min(pace.sleep, 1) * 1e6)) }
    }

    /// How long to sleep (seconds) so that `sent` bytes go at `rate` bytes per second since
    /// `started` (`MonotonicTime`), and the start to use from now on (moved up when the
    /// transfer is more than `burstSeconds` behind).
    static func pace(sent: Int64, rate: Int64, started: UInt64, now: UInt64) -> (sleep: Double, started: UInt64) {
        let due = Double(sent) / Double(rate)
        let elapsed = Double(now - started) / 1e9
        guard elapsed - due <= burstSeconds else { return (0, now - UInt64((due + burstSeconds) * 1e9)) }
        return (max(due - elapsed, 0), started)
    }

    /// The most a capped transfer that fell behind may run ahead of its rate to catch up.
    static let burstSeconds = 0.25

    static func hex(_ digest: [UInt8]) -> String {
        digest.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
}

import Foundation
import Glibc

/// Starting, completing, discarding and salvaging captures. Each step is ordered so that a
/// process killed at any point leaves a state the next `Pool.open` finishes the same way:
///
/// 1. start: journal written durably, then `reserve` renamed to `capture/data`.
/// 2. finish: data flushed and its length committed, then the recording placed (renamed to
///    the destination, or copied there and verified, or kept in `recordings/`), then the
///    journal records the reserve to rebuild (`reserveTarget`), then `reserve.new` is grown and
///    renamed to `reserve`, then `capture/` is removed (the journal last).
/// A killed capture is salvaged the same way from its last committed length.
extension Pool {
    /// Starts a capture that will move its recording to `destination`.
    /// - Throws: `.busy` (another capture in any process, a resize, a replenish);
    ///   `.notEnoughSpace` when the remaining capacity is 0; `.invalidDestination` when the
    ///   destination's directory does not exist, is not a directory or is not writable, or the
    ///   destination is inside the pool; `.destinationExists`.
    public func startCapture(to destination: String, options: CaptureOptions = CaptureOptions()) throws -> Capture {
        let destination = try resolveDestination(destination)
        let holder = try PoolLock(path: layout.lock, access: access)
        var journal = CaptureJournal(id: Self.newCaptureID(), destination: destination, capacityAtStart: 0,
                                     alignment: directIOAlignment.io, bitrate: options.bitrate, engine: "",
                                     phase: .starting, startedAt: Date().timeIntervalSince1970,
                                     pid: ProcessIdentity.pid, reserveTarget: nil)
        journal.landInBackground = try options.landing.landsInBackground(destination, poolDirectory: path)
        try lock.withMutation {
            let busy = try lock.heldByOthers()
            guard busy.isEmpty, try holder.tryHold(.capturing) else {
                var error = busyError(busy.isEmpty ? .capturing : busy, action: "start a capture")
                if let running = try? CaptureJournal.load(layout.captureJournal) {
                    error.message += "; process \(running.pid) is recording to \(running.destination). A pool takes "
                        + "one capture at a time: record a second stream into another pool"
                }
                throw error
            }
            do {
                if FileSystem.exists(layout.captureDirectory) { _ = try salvageDeadCapture() }
                journal.capacityAtStart = try reserve(layout.reserve).size()
                guard journal.capacityAtStart > 0 else {
                    throw ProVideoError(.notEnoughSpace, "the pool has no remaining capacity; run `provideo replenish` "
                                        + "or `provideo resize`" + landingHint(), path: path)
                }
                try createCaptureFiles(journal)
                CrashPoint.hit("capture.journaled")
                try FileSystem.rename(layout.reserve, layout.captureData)
                try FileSystem.syncDirectory(layout.captureDirectory, calls)
                try FileSystem.syncDirectory(path, calls)
            } catch {
                holder.release(.capturing)
                throw error
            }
        }
        do {
            let data = try FileDescriptor.open(layout.captureData, O_RDWR, direct: true)
            let capture = try Capture(pool: self, journal: journal, busy: holder, data: data, options: options)
            journal.engine = capture.statistics.engine
            journal.phase = .recording
            try journal.save(layout.captureJournal, calls, access: access)
            return capture
        } catch {
            try? discardCapture()
            holder.release(.capturing)
            throw error
        }
    }

    /// Creates every file a capture needs before it takes the reserve, so that a filesystem
    /// out of inodes or space refuses the capture here, with the reserve whole and nothing
    /// left behind: `capture/`, `progress` and `commit` with their blocks allocated (their first
    /// writes then need none), and the journal: 4 inodes, with one more left for the later
    /// steps, which need one at a time (a journal rewrite, then `reserve.new` at finish). The
    /// rewrites' blocks come from the pool's spare when the filesystem is full.
    private func createCaptureFiles(_ journal: CaptureJournal) throws {
        let stepsAfterStart: Int64 = 1
        do {
            try FileSystem.makeDirectory(layout.captureDirectory, access: access)
            let commitBytes = Int64(CaptureJournal.commitSlots.last! + 512)
            for (file, bytes) in [(layout.captureProgress, Int64(directIOAlignment.io)), (layout.captureCommit, commitBytes)] {
                let fd = try access.openCreating(file, O_RDWR)
                let rc = calls.fallocate(fd.rawValue, false, 0, bytes)
                if rc < 0 { throw ProVideoError.system("fallocate", errno: -rc, path: file) }
            }
            try journal.save(layout.captureJournal, calls, access: access)
            guard try FileSystem.freeInodes(path) >= stepsAfterStart else { throw ProVideoError(.notEnoughSpace, "", errno: ENOSPC) }
        } catch {
            for file in [layout.captureJournal, layout.captureJournal + ".tmp", layout.captureProgress, layout.captureCommit] {
                try? FileSystem.remove(file)
            }
            try? FileSystem.removeDirectory(layout.captureDirectory)
            guard let failure = error as? ProVideoError, failure.code == .notEnoughSpace else { throw error }
            let outOfInodes = (try? FileSystem.freeInodes(path)).map { $0 < stepsAfterStart + 4 } ?? false
            var refusal = failure
            refusal.message = outOfInodes
                ? "the filesystem of \(path) has too few free inodes for a capture's own files (it needs 5; "
                    + "`df -i` shows them); delete some files there and try again: nothing was recorded"
                : "the filesystem of \(path) has no room for a capture's own files (\(failure.message)); free some "
                    + "space there and try again: nothing was recorded"
            throw refusal
        }
    }

    private static func newCaptureID() -> String {
        String(UInt64(Date().timeIntervalSince1970 * 1000), radix: 36) + "-" + String(UInt32.random(in: 0...UInt32.max), radix: 36)
    }

    /// The destination with its directory resolved (symbolic links, `..`), so the checks made
    /// now hold at finish even if a link in the path changes.
    /// - Throws: `.invalidDestination`, `.destinationExists`.
    func resolveDestination(_ destination: String) throws -> String {
        let absolute = FileSystem.absolute(destination)
        let name = FileSystem.lastComponent(of: absolute)
        guard !destination.hasSuffix("/"), !name.isEmpty else {
            throw ProVideoError(.invalidDestination, "\(destination) names a directory; give a file name", path: destination)
        }
        let directory = FileSystem.parent(of: absolute)
        guard let real = FileSystem.realPath(directory) else {
            throw ProVideoError(.invalidDestination, "the destination's directory \(directory) does not exist; create it "
                                + "first", path: destination)
        }
        let resolved = real + "/" + name
        try checkDestination(resolved.hasPrefix("//") ? String(resolved.dropFirst()) : resolved)
        return resolved.hasPrefix("//") ? String(resolved.dropFirst()) : resolved
    }

    private func checkDestination(_ destination: String) throws {
        let directory = FileSystem.parent(of: destination)
        guard FileSystem.isDirectory(directory) else {
            throw ProVideoError(.invalidDestination, "the destination's directory \(directory) does not exist; create it "
                                + "before starting the capture", path: destination)
        }
        guard FileSystem.isWritable(directory) else {
            throw ProVideoError(.invalidDestination, "the destination's directory \(directory) is not writable",
                                path: destination)
        }
        if FileSystem.existsWithoutFollowing(destination) {
            throw ProVideoError(.destinationExists, "\(destination) already exists; it is never overwritten: choose "
                                + "another name", path: destination)
        }
        let poolDirectory = FileSystem.realPath(path) ?? path
        if destination.hasPrefix(poolDirectory + "/") || destination.hasPrefix(path + "/") {
            throw ProVideoError(.invalidDestination, "\(destination) is inside the pool directory; choose a destination "
                                + "outside \(path)", path: destination)
        }
    }

    // MARK: Completing

    /// Where a recording went.
    struct Placement {
        var path: String
        /// The reserve to rebuild afterwards, in bytes.
        var reserveTarget: Int64
        /// Set when the recording could not reach its destination and stays in the pool.
        var problem: ProVideoError?
        /// The recording stays in the pool to land at its destination in the background.
        var landing = false
    }

    /// What to do when the destination exists at the end.
    enum TakenDestination { case keepInPool, recoveredSibling }

    /// Places the recording (its `length` bytes flushed in `capture/data`), rebuilds the reserve
    /// and removes the capture's files. Throws the placement's problem after cleaning up.
    func completeCapture(journal: CaptureJournal, length: Int64, whenTaken: TakenDestination = .keepInPool) throws -> Placement {
        var journal = journal
        var placement: Placement
        if let target = journal.reserveTarget {
            placement = Placement(path: journal.placedAt ?? journal.destination, reserveTarget: target, problem: nil)
        } else if FileSystem.exists(layout.captureData) {
            placement = try placeRecording(journal, length: length, whenTaken: whenTaken)
            journal.reserveTarget = placement.reserveTarget
            journal.placedAt = placement.path
            journal.phase = .completing
            try journal.save(layout.captureJournal, calls, access: access)
            CrashPoint.hit("finish.placed")
        } else {
            // Killed after the rename into place, before the journal recorded it: the recording
            // is at its recovered sibling (named with this capture's id, so it is this one) when
            // a salvage found the destination taken, else at the destination.
            let sibling = Self.recoveredName(journal.destination, id: journal.id)
            placement = Placement(path: FileSystem.exists(sibling) ? sibling : journal.destination,
                                  reserveTarget: journal.capacityAtStart - reserve(layout.reserve).rounded(length),
                                  problem: nil)
        }
        if FileSystem.exists(layout.captureData) && !FileSystem.exists(layout.newReserve) {
            // The recording was copied out (or discarded): its allocated file becomes the reserve.
            try FileSystem.rename(layout.captureData, layout.newReserve)
        }
        // Killed after `reserve.new` became `reserve`: the rebuild is done, do not redo it.
        if FileSystem.exists(layout.newReserve) || !FileSystem.exists(layout.reserve) {
            let replenishing = try PoolLock(path: layout.lock, access: access)
            _ = try replenishing.tryHold(.replenishing)
            defer { replenishing.release(.replenishing) }
            try rebuildReserve(to: placement.reserveTarget)
        }
        for file in [layout.captureProgress, layout.captureCommit, layout.captureData, layout.captureJournal + ".tmp",
                     layout.captureJournal] {
            try FileSystem.remove(file)
        }
        try FileSystem.removeDirectory(layout.captureDirectory)
        try FileSystem.syncDirectory(path, calls)
        if let problem = placement.problem { throw problem }
        return placement
    }

    /// Discards the capture's recording and gives all of its space back to the reserve.
    func discardCapture() throws {
        var journal = try CaptureJournal.load(layout.captureJournal)
        journal.reserveTarget = journal.capacityAtStart
        journal.placedAt = nil
        journal.phase = .completing
        try journal.save(layout.captureJournal, calls, access: access)
        CrashPoint.hit("cancel.journaled")
        _ = try completeCapture(journal: journal, length: 0)
    }

    /// Salvages a capture whose owner died: cuts it to its last committed length, flushes it,
    /// moves it to its destination (to a sibling name when the destination now exists) and
    /// returns the unused reserve. Call with the mutation lock held and `capturing` free.
    @discardableResult
    func salvageDeadCapture() throws -> SalvagedRecording? {
        guard let journal = try? CaptureJournal.load(layout.captureJournal) else {
            // Killed before the journal was durable: the reserve was never taken.
            for file in [layout.captureJournal + ".tmp", layout.captureProgress, layout.captureCommit] { try FileSystem.remove(file) }
            if FileSystem.exists(layout.captureData) && !FileSystem.exists(layout.reserve) {
                try FileSystem.rename(layout.captureData, layout.reserve)
            }
            try FileSystem.removeDirectory(layout.captureDirectory)
            return nil
        }
        if journal.phase == .starting && FileSystem.exists(layout.reserve) && !FileSystem.exists(layout.captureData) {
            // Killed between the journal and taking the reserve.
            for file in [layout.captureJournal, layout.captureProgress, layout.captureCommit] { try FileSystem.remove(file) }
            try FileSystem.removeDirectory(layout.captureDirectory)
            return nil
        }
        let committed = CaptureJournal.readCommitted(layout.captureCommit)
        if journal.reserveTarget == nil && committed == 0 {
            // Nothing reached the disk durably: leave no empty file at the destination, and say so.
            let written = CaptureJournal.readCounter(layout.captureProgress)
            try discardCapture()
            discarded.append(DiscardedCapture(destination: journal.destination, bytesWritten: written))
            return nil
        }
        do {
            let placement = try completeCapture(journal: journal, length: committed, whenTaken: .recoveredSibling)
            return try logged(SalvagedRecording(path: placement.path, length: committed, salvagedAt: Date().timeIntervalSince1970))
        } catch let error as ProVideoError where error.path?.hasPrefix(layout.recordings) == true {
            return try logged(SalvagedRecording(path: error.path!, length: committed, salvagedAt: Date().timeIntervalSince1970))
        }
    }

    private func logged(_ recording: SalvagedRecording) throws -> SalvagedRecording {
        try logSalvage(recording)
        return recording
    }

    // MARK: Placing the recording

    private func placeRecording(_ journal: CaptureJournal, length: Int64, whenTaken: TakenDestination) throws -> Placement {
        let destination = journal.destination
        let directory = FileSystem.parent(of: destination)
        let moved = journal.capacityAtStart - reserve(layout.reserve).rounded(length)
        guard FileSystem.isDirectory(directory) else {
            return try keepInPool(journal, length: length, problem: ProVideoError(
                .invalidDestination, "the destination's directory \(directory) no longer exists", path: destination))
        }
        // On the pool's filesystem the file itself becomes the recording: cut and sealed first.
        // Elsewhere it is copied and goes back to the reserve whole.
        let sameFilesystem = try FileSystem.facts(directory).dev_major == FileSystem.facts(path).dev_major
            && FileSystem.facts(directory).dev_minor == FileSystem.facts(path).dev_minor
        if sameFilesystem { try sealRecording(length: length) }
        if !sameFilesystem && journal.landInBackground == true { return try queueForLanding(journal, length: length) }
        let mover = RecordingMove(calls: calls)
        var target = destination
        do {
            do {
                let outcome = try mover.move(layout.captureData, length: length, to: target, tag: journal.id,
                                              renaming: sameFilesystem)
                return Placement(path: target, reserveTarget: outcome == .renamed ? moved : journal.capacityAtStart,
                                 problem: nil)
            } catch let error as ProVideoError where error.code == .destinationExists && whenTaken == .recoveredSibling {
                target = Self.recoveredName(destination, id: journal.id)
                let outcome = try mover.move(layout.captureData, length: length, to: target, tag: journal.id,
                                              renaming: sameFilesystem)
                return Placement(path: target, reserveTarget: outcome == .renamed ? moved : journal.capacityAtStart,
                                 problem: nil)
            }
        } catch let error as ProVideoError {
            var problem = error
            if error.code == .destinationExists {
                problem.message = "\(destination) appeared while recording; it was not overwritten"
            }
            return try keepInPool(journal, length: length, problem: problem)
        }
    }

    /// Makes `capture/data` the recording as it will be moved: cut to `length`, flushed, and
    /// with the usual file mode (0666 less umask; the reserve is private to the pool, 0600).
    private func sealRecording(length: Int64) throws {
        let data = try FileDescriptor.open(layout.captureData, O_RDWR)
        try data.truncate(length, calls)
        try data.sync(calls)
        // The recording belongs to the recording process's user, as a file it wrote would. Only
        // root may give a file away: a reserve another user of the pool's group created stays
        // theirs, group read/write (see Docs/POOL-LAYOUT.md, "Access").
        let facts = try data.facts()
        if ProcessIdentity.isRoot && (facts.uid != ProcessIdentity.user || facts.gid != ProcessIdentity.group) {
            try data.setOwner(ProcessIdentity.user, ProcessIdentity.group)
        }
        if ProcessIdentity.isRoot || facts.uid == ProcessIdentity.user {
            try data.setMode(0o666 & ~ProcessIdentity.umask)
        }
    }

    /// "take.mov" → "take.recovered-<id>.mov", next to the destination; the part before the
    /// extension is shortened when the whole would not fit NAME_MAX (`DerivedName`).
    static func recoveredName(_ destination: String, id: String) -> String {
        let name = FileSystem.lastComponent(of: destination)
        let directory = FileSystem.parent(of: destination)
        let (stem, ext) = DerivedName.splitExtension(name)
        let marker = ".recovered-\(id)"
        let room = DerivedName.maximumBytes - marker.utf8.count - ext.utf8.count
        return "\(directory)/\(DerivedName.shortened(stem, toBytes: room))\(marker)\(ext)"
    }

    /// Keeps the recording in `recordings/` with a note of where it was meant to go (`landing`:
    /// and that `provideo land` takes it there).
    func keepInPool(_ journal: CaptureJournal, length: Int64, problem: ProVideoError, landing: Bool = false) throws -> Placement {
        try FileSystem.makeDirectory(layout.recordings, access: access)
        // Room for the note beside it, "<kept>.json", and that note's ".tmp" while it is written.
        let room = DerivedName.maximumBytes - "\(journal.id)-".utf8.count - ".json.tmp".utf8.count
        let kept = layout.recordings + "/\(journal.id)-"
            + DerivedName.shortened(FileSystem.lastComponent(of: journal.destination), toBytes: room)
        try sealRecording(length: length)
        let note = HeldRecording(path: kept, destination: journal.destination, length: length, reason: problem.message,
                                 movingTo: nil, landing: landing ? true : nil)
        try note.save(kept + ".json", calls, access: access)
        try FileSystem.rename(layout.captureData, kept)
        try FileSystem.syncDirectory(layout.recordings, calls)
        var reported = problem
        reported.message += "; the recording (\(length) bytes) is kept in the pool at \(kept): "
            + "`provideo move \(kept) [DEST]` moves it once a destination can take it"
        reported.path = kept
        return Placement(path: kept, reserveTarget: journal.capacityAtStart - reserve(layout.reserve).rounded(length),
                         problem: reported)
    }

    /// Grows or shrinks `reserve.new` to `target` bytes (best effort when space is short), then
    /// renames it to `reserve`.
    private func rebuildReserve(to target: Int64) throws {
        let newReserve = reserve(layout.newReserve)
        let fd = try newReserve.open(create: true, nocow: configuration.storage.isBtrfs)
        let size = try newReserve.size()
        if size % newReserve.unit != 0 || size > target {
            try fd.truncate(min(newReserve.rounded(size), max(target, 0)), calls)
        }
        let current = try newReserve.size()
        if target > current {
            do {
                _ = try refill(newReserve, by: target - current)
            } catch let error as ProVideoError where error.code == .notEnoughSpace {
                // Best effort: the pool reports the smaller reserve; `replenish` restores it later.
            }
        }
        CrashPoint.hit("finish.reserveRebuilt")
        try FileSystem.rename(layout.newReserve, layout.reserve)
    }
}

/// A recording the pool holds because its destination could not take it; its note is stored
/// beside it as `<recording>.json`.
public struct HeldRecording: Codable, Sendable {
    /// Where the recording is, inside the pool's `recordings/`.
    public var path: String
    /// Where it was meant to go.
    public var destination: String
    /// Its length in bytes.
    public var length: Int64
    /// Why it could not go there.
    public var reason: String
    /// Set while `provideo move` moves it there, so a killed move is finished by `repair()`.
    public var movingTo: String?
    /// true while it waits to land at its destination in the background (`provideo land`).
    public var landing: Bool?

    func save(_ file: String, _ calls: SystemCalls, access: PoolAccess) throws {
        try FileSystem.replaceDurably(file, with: Array(try JSONEncoder().encode(self)), calls, access: access)
    }
}

import Foundation
import Glibc

/// Starting, completing, discarding and salvaging captures, each in its own `captures/<id>/`
/// (`CaptureFiles`). Each step is ordered so that a process killed at any point leaves a state
/// the next `Pool.open` finishes the same way, for that capture alone:
///
/// 1. start (under the mutation lock): admission, then the capture's files and its journal
///    written durably, then its first grant from the reserve (`ReserveGrants`). A granter
///    thread keeps granting ahead of the write head while it records.
/// 2. finish: data flushed and its length committed, then the unused grant given back to the
///    reserve (all but `completionRoom`, freed for the journal's rewrite), then the recording
///    placed (renamed to the destination, or copied there and verified, or kept in
///    `recordings/`), then the journal records `placedAt` and what is `owed`, then a copied
///    file is given back and removed, then the capture's files are removed (the journal
///    last), then what is owed is paid to the reserve.
/// A killed capture is salvaged the same way from its last committed length.
extension Pool {
    /// Starts a capture that will move its recording to `destination`. Several captures, from
    /// one process or many, may run in one pool at once (up to the pool's `maxCaptures`), each
    /// admitted against the pool's bandwidth.
    /// - Throws: `.busy` (a resize is running, or the pool's `maxCaptures` captures are);
    ///   `.bandwidthExceeded` when the running captures' bitrates and this one's exceed the
    ///   admissible bandwidth (unless `options.admitOverBandwidth`); `.notEnoughSpace` when the
    ///   remaining capacity is 0 or the filesystem has no room or inode for the capture's own
    ///   files; `.invalidDestination` when the destination's directory does not exist, is not a
    ///   directory or is not writable, or the destination is inside the pool;
    ///   `.destinationExists`.
    public func startCapture(to destination: String, options: CaptureOptions = CaptureOptions()) throws -> Capture {
        let destination = try resolveDestination(destination)
        let claim = try CaptureClaim(poolLockPath: layout.lock, access: access)
        let files = layout.capture(Self.newCaptureID())
        var journal = CaptureJournal(id: files.id, destination: destination, alignment: directIOAlignment.io,
                                     bitrate: options.bitrate, engine: "", phase: .starting,
                                     startedAt: Date().timeIntervalSince1970, pid: ProcessIdentity.pid)
        journal.landInBackground = try options.landing.landsInBackground(destination, poolDirectory: path)
        let reserveFile = reserve(layout.reserve)
        let step = options.grantStep(unit: reserveFile.unit, capacity: configuration.initialCapacity)
        var granted: Int64 = 0
        try lock.withMutation {
            let busy = try lock.heldByOthers()
            guard !busy.contains(.adjustingCapacity), try claim.holdCapturing() else {
                throw busyError(busy.subtracting(.replenishing), action: "start a capture")
            }
            do {
                try salvageDeadCaptures()
                configuration = try PoolConfiguration.load(layout.configuration)
                let running = try runningCaptures()
                try refuseTakenDestination(destination, running: running)
                try admit(options, running: running, journal: &journal)
                guard try reserveFile.size() > 0 else {
                    throw ProVideoError(.notEnoughSpace, "the pool has no remaining capacity"
                                        + (running.isEmpty ? "" : " (\(running.count) running capture(s) hold it)")
                                        + "; run `provideo replenish` or `provideo resize`" + landingHint(), path: path)
                }
                try createCaptureFiles(files, journal, claim: claim)
                CrashPoint.hit("capture.journaled")
                let data = try FileDescriptor.open(files.data, O_RDWR)
                granted = try ReserveGrants(reserve: reserveFile, lock: lock).grant(step, to: data, granted: 0, sharing: true)
                guard granted > 0 else {
                    throw ProVideoError(.notEnoughSpace, "the pool has no remaining capacity: the running captures "
                                        + "hold it; run `provideo replenish` or `provideo resize`", path: path)
                }
                try FileSystem.syncDirectory(files.directory, calls)
                try FileSystem.syncDirectory(layout.captures, calls)
            } catch {
                if FileSystem.exists(files.directory) { try? discardCapture(files) }
                claim.release()
                throw error
            }
        }
        var granter: CaptureGranter?
        do {
            let data = try FileDescriptor.open(files.data, O_RDWR, direct: true)
            let started = CaptureGranter(grants: ReserveGrants(reserve: reserveFile, lock: try PoolLock(path: layout.lock, access: access)),
                                         data: try FileDescriptor.open(files.data, O_RDWR), granted: granted, step: step)
            granter = started
            let capture = try Capture(pool: self, files: files, journal: journal, claim: claim, data: data,
                                      granter: started, options: options)
            journal.engine = capture.statistics.engine
            journal.phase = .recording
            try journal.save(files.journal, calls, access: access)
            return capture
        } catch {
            // A capture that never came to be has no deinit to stop its granter's thread.
            _ = granter?.stop()
            try? discardCapture(files)
            claim.release()
            throw error
        }
    }

    /// Creates every file a capture needs, so that a filesystem out of inodes or space refuses
    /// the capture here, with the reserve whole and nothing left behind: `captures/<id>/`,
    /// `progress` and `commit` with their blocks allocated (their first writes then need none),
    /// the empty `data` (NOCOW on btrfs before its first block), and the journal: 5 inodes,
    /// with one more left for the later steps (a journal rewrite). The rewrites' blocks come
    /// from the pool's spare when the filesystem is full. Locks the capture for `claim`.
    private func createCaptureFiles(_ files: CaptureFiles, _ journal: CaptureJournal, claim: CaptureClaim) throws {
        let stepsAfterStart: Int64 = 1
        do {
            try access.makeDirectory(layout.captures)
            try access.makeDirectory(files.directory, keepingOwner: true)
            let commitBytes = Int64(CaptureJournal.commitSlots.last! + 512)
            for (file, bytes) in [(files.progress, Int64(directIOAlignment.io)), (files.commit, commitBytes)] {
                let fd = try access.openCreating(file, O_RDWR)
                let rc = calls.fallocate(fd.rawValue, false, 0, bytes)
                if rc < 0 { throw ProVideoError.system("fallocate", errno: -rc, path: file) }
            }
            try claim.holdCapture(files)
            _ = try reserve(files.data).open(create: true, nocow: configuration.storage.isBtrfs, recorders: true)
            try journal.save(files.journal, calls, access: access)
            guard try FileSystem.freeInodes(path) >= stepsAfterStart else { throw ProVideoError(.notEnoughSpace, "", errno: ENOSPC) }
        } catch {
            removeFiles(of: files)
            guard let failure = error as? ProVideoError, failure.code == .notEnoughSpace else { throw error }
            let outOfInodes = (try? FileSystem.freeInodes(path)).map { $0 < stepsAfterStart + 5 } ?? false
            var refusal = failure
            refusal.message = outOfInodes
                ? "the filesystem of \(path) has too few free inodes for a capture's own files (it needs 6; "
                    + "`df -i` shows them); delete some files there and try again: nothing was recorded"
                : "the filesystem of \(path) has no room for a capture's own files (\(failure.message)); free some "
                    + "space there and try again: nothing was recorded"
            throw refusal
        }
    }

    /// Removes a capture's files and its directory (the journal last), ignoring what is gone.
    private func removeFiles(of files: CaptureFiles) {
        for file in [files.progress, files.commit, files.data, files.journal + ".tmp", files.journal] {
            try? FileSystem.remove(file)
        }
        try? FileSystem.removeDirectory(files.directory)
    }

    private static func newCaptureID() -> String {
        String(UInt64(Date().timeIntervalSince1970 * 1000), radix: 36) + "-" + String(UInt32.random(in: 0...UInt32.max), radix: 36)
    }

    /// The destination with its directory resolved (symbolic links, `..`), so the checks made
    /// now hold at finish even if a link in the path changes.
    /// - Throws: `.invalidDestination`, `.destinationExists`.
    func resolveDestination(_ destination: String) throws -> String {
        // "" would resolve to the current directory, refused as existing: say what is wrong.
        guard !destination.isEmpty else {
            throw ProVideoError(.invalidDestination, "the destination path is empty; give a file name", path: destination)
        }
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

    /// Places the recording (its `length` bytes flushed in `files.data`), gives the capture's
    /// unused space back to the reserve and removes the capture's files. Throws the placement's
    /// problem after cleaning up. Call with the capture's granter stopped (or its owner dead).
    func completeCapture(_ files: CaptureFiles, journal: CaptureJournal, length: Int64,
                         whenTaken: TakenDestination = .keepInPool) throws -> Placement {
        var journal = journal
        var placement: Placement
        if journal.discarded == true || journal.placedAt != nil {
            placement = Placement(path: journal.placedAt ?? journal.destination, problem: nil)
        } else if FileSystem.exists(files.data) {
            journal.owed = try trimUnusedGrant(files, length: length)
            placement = try placeRecording(files, journal, length: length, whenTaken: whenTaken)
            journal.placedAt = placement.path
            journal.phase = .completing
            try journal.save(files.journal, calls, access: access)
            CrashPoint.hit("finish.placed")
        } else {
            // Killed after the rename into place, before the journal recorded it: the recording
            // is at its recovered sibling (named with this capture's id, so it is this one) when
            // a salvage found the destination taken, else at the destination.
            let sibling = Self.recoveredName(journal.destination, id: journal.id)
            placement = Placement(path: FileSystem.exists(sibling) ? sibling : journal.destination, problem: nil)
        }
        // A copied (or discarded) recording's file goes back to the reserve whole.
        if FileSystem.exists(files.data) {
            try giveBack(from: files.data, keeping: 0)
            try FileSystem.remove(files.data)
        }
        CrashPoint.hit("finish.reserveRebuilt")
        removeFiles(of: files)
        if FileSystem.exists(files.directory) {
            throw ProVideoError.system("rmdir", errno: ENOTEMPTY, path: files.directory)
        }
        try FileSystem.syncDirectory(layout.captures, calls)
        // Paid once the journal is gone, so a replay never pays twice (a kill just before loses
        // it: `replenish` restores it).
        if let owed = journal.owed { try lock.withReserve { growReserve(by: owed) } }
        if let problem = placement.problem { throw problem }
        return placement
    }

    /// Discards a capture's recording and gives all of its space back to the reserve.
    func discardCapture(_ files: CaptureFiles) throws {
        guard var journal = try? CaptureJournal.load(files.journal) else {
            // Killed (or failed) before the journal was durable.
            if FileSystem.exists(files.data) { try giveBack(from: files.data, keeping: 0) }
            removeFiles(of: files)
            return
        }
        journal.discarded = true
        journal.placedAt = nil
        journal.phase = .completing
        try journal.save(files.journal, calls, access: access)
        CrashPoint.hit("cancel.journaled")
        _ = try completeCapture(files, journal: journal, length: 0)
    }

    /// Bytes given back to the reserve per step (`giveBack`): what a crash between a step's two
    /// calls can lose from the reserve until `replenish`.
    static let returnStep: Int64 = 1 << 30

    /// Gives the bytes of a capture's file past `keep` back to the reserve, a step at a time:
    /// each step cuts the file, then grows the reserve by what that freed (best effort), so the
    /// file's size is always what is left to give: a crash between the two loses at most one
    /// step (restored by `replenish`) and never gives a byte twice.
    func giveBack(from data: String, keeping keep: Int64) throws {
        while try lock.withReserve({ () -> Bool in
            let size = Int64(try FileSystem.facts(data).size)
            guard size > keep else { return false }
            let amount = min(size - keep, Self.returnStep)
            try FileDescriptor.open(data, O_RDWR).truncate(size - amount, calls)
            growReserve(by: amount)
            return true
        }) {}
    }

    /// Bytes of a finishing capture's unused grant that are freed on the filesystem rather than
    /// given to the reserve until the capture's journal is gone: the journal's rewrite then
    /// finds a block and an inode even on a full filesystem (XFS allocates inodes in chunks).
    static let completionRoom: Int64 = 1 << 20

    /// Gives a finishing capture's unused grant (its file past the recording, rounded up to the
    /// allocation unit) back to the reserve, all but `completionRoom` bytes, which it frees.
    /// - Returns: the bytes freed and owed to the reserve.
    private func trimUnusedGrant(_ files: CaptureFiles, length: Int64) throws -> Int64 {
        let keep = reserve(layout.reserve).rounded(length)
        let room = min(max(Int64(try FileSystem.facts(files.data).size) - keep, 0), Self.completionRoom)
        try giveBack(from: files.data, keeping: keep + room)
        try FileDescriptor.open(files.data, O_RDWR).truncate(keep, calls)
        return room
    }

    /// Grows the reserve by up to `bytes`, best effort, never past `initialCapacity` less what
    /// the captures hold. Call with the reserve lock held.
    private func growReserve(by bytes: Int64) {
        let reserveFile = reserve(layout.reserve)
        let capacity = (try? PoolConfiguration.load(layout.configuration).initialCapacity) ?? configuration.initialCapacity
        guard let size = try? reserveFile.size() else { return }
        // Grants that cannot be counted are not given away.
        guard let held = try? capturesHold() else { return }
        let grow = min(bytes, capacity - held - size) / reserveFile.unit * reserveFile.unit
        // Best effort: a reserve that could not grow is smaller; `replenish` restores it later.
        if grow > 0 { _ = try? refill(reserveFile, by: grow) }
    }

    /// The bytes every capture's file holds (their grants), in bytes.
    func capturesHold() throws -> Int64 {
        try captureFiles().map { files in (try? FileSystem.facts(files.data)).map { Int64(clamping: $0.size) } ?? 0 }
            .saturatingSum()
    }

    /// Salvages every capture whose owner died, each alone, leaving running captures untouched.
    /// Call with the mutation lock held.
    /// - Returns: the recordings salvaged.
    @discardableResult
    func salvageDeadCaptures() throws -> [SalvagedRecording] {
        try adoptLegacyCapture()
        var recordings: [SalvagedRecording] = []
        for files in try captureFiles() where !CaptureClaim.isAlive(files) {
            do {
                if let recording = try salvage(files) { recordings.append(recording) }
            } catch let error as ProVideoError where error.code == .corruptState || error.code == .permissionDenied {
                // A planted link or file, or another user's capture this process may not
                // change: refused, reported, and no reason to leave the others.
                if !unsalvageable.contains(where: { $0.path == error.path }) { unsalvageable.append(error) }
            }
        }
        return recordings
    }

    /// A pool of format 1 kept its one capture in `capture/`, with the whole reserve as its
    /// file: it becomes `captures/<id>/`, a capture granted everything, salvaged as any other.
    private func adoptLegacyCapture() throws {
        guard FileSystem.exists(layout.legacyCapture), !(try lock.heldByOthers().contains(.capturing)) else { return }
        let id = (try? CaptureJournal.load(layout.legacyCapture + "/capture.json"))?.id ?? "legacy"
        try access.makeDirectory(layout.captures)
        try FileSystem.rename(layout.legacyCapture, layout.capture(id).directory)
        try FileSystem.syncDirectory(path, calls)
    }

    /// Salvages one capture whose owner died: cuts it to its last committed length, flushes it,
    /// moves it to its destination (to a sibling name when the destination now exists) and
    /// returns the unused space to the reserve.
    private func salvage(_ files: CaptureFiles) throws -> SalvagedRecording? {
        let journal: CaptureJournal
        do {
            journal = try CaptureJournal.load(files.journal)
        } catch {
            // Without its journal a capture may be discarded only when nothing of it was
            // committed (killed before the journal was durable); committed bytes are kept.
            let committed = CaptureJournal.readCommitted(files.commit)
            guard committed > 0 else {
                try discardCapture(files)
                return nil
            }
            let reason = (error as? ProVideoError)?.message ?? "\(error)"
            throw ProVideoError(.corruptState, "the journal of capture \(files.id) is unreadable (\(reason)): its "
                                + "\(committed) committed bytes are kept at \(files.data); `provideo recover "
                                + "--salvage-to DIR` places them in DIR", path: files.journal)
        }
        if journal.phase == .starting {
            // Killed before it recorded anything.
            try discardCapture(files)
            return nil
        }
        var committed = CaptureJournal.readCommitted(files.commit)
        var note: String?
        if journal.placedAt == nil, let size = try? FileSystem.facts(files.data).size, UInt64(committed) > size {
            // A commit record never claims more than was written: keep what is there, say so.
            note = "its commit record claims \(committed) bytes but \(files.data) holds \(size); \(size) were kept"
            committed = Int64(size)
        }
        if journal.placedAt == nil && journal.discarded == nil && committed == 0 {
            // Nothing reached the disk durably: leave no empty file at the destination, and say so.
            let written = CaptureJournal.readCounter(files.progress)
            try discardCapture(files)
            discarded.append(DiscardedCapture(destination: journal.destination, bytesWritten: written))
            return nil
        }
        do {
            let placement = try completeCapture(files, journal: journal, length: committed, whenTaken: .recoveredSibling)
            return try logged(SalvagedRecording(path: placement.path, length: committed,
                                                salvagedAt: Date().timeIntervalSince1970, note: note))
        } catch let error as ProVideoError where error.path?.hasPrefix(layout.recordings) == true {
            return try logged(SalvagedRecording(path: error.path!, length: committed,
                                                salvagedAt: Date().timeIntervalSince1970, note: note))
        }
    }

    /// Salvages the dead captures whose journal is unreadable but that committed bytes, each to
    /// `directory`/`<id>.salvaged` (a journal is written for it first), as their owner.
    /// - Returns: the recordings salvaged.
    /// - Throws: `.invalidDestination` when `directory` cannot take them; what a salvage throws.
    package func salvageWithoutJournal(into directory: String) throws -> [SalvagedRecording] {
        try lock.withMutation {
            var recordings: [SalvagedRecording] = []
            for files in try captureFiles() where !CaptureClaim.isAlive(files) && (try? CaptureJournal.load(files.journal)) == nil
                && CaptureJournal.readCommitted(files.commit) > 0 {
                let destination = try resolveDestination(directory + "/\(files.id).salvaged")
                let journal = CaptureJournal(id: files.id, destination: destination, alignment: directIOAlignment.io,
                                             bitrate: 0, engine: "", phase: .recording,
                                             startedAt: Date().timeIntervalSince1970, pid: 0)
                try FileSystem.remove(files.journal)
                try journal.save(files.journal, calls, access: access)
                if let recording = try salvage(files) { recordings.append(recording) }
            }
            salvaged += recordings
            return recordings
        }
    }

    /// The captures whose recorder died, not yet salvaged (`provideo recover` salvages them),
    /// by id.
    /// - Throws: `.ioError` when `captures/` cannot be listed.
    package func deadCaptures() throws -> [String] {
        try captureFiles().filter { !CaptureClaim.isAlive($0) }.map(\.id)
    }

    private func logged(_ recording: SalvagedRecording) throws -> SalvagedRecording {
        try logSalvage(recording)
        return recording
    }
}

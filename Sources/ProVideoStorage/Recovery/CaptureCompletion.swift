import FoundationEssentials
import Glibc
import ProVideoSystem
import ProVideoJournal

/// Completing and discarding a capture: its recording placed (or discarded), its unused space
/// back to the reserve, its files removed, each step recorded in its journal first (see
/// Capture/CaptureStart.swift for the whole order). A value handed what it needs of the pool
/// (`Pool.completion`): its layout, access rules, locks and system calls, its reserve, and
/// how to count the pool's capacity.
struct CaptureCompletion {
    let layout: PoolLayout
    let access: PoolAccess
    let lock: PoolLock
    let calls: SystemCalls
    /// The pool's reserve file (`layout.reserve`).
    let reserve: Reserve
    /// The pool's capacity as its files and claims hold it now (`Pool.capacityAccount`); call
    /// with the reserve lock held.
    let account: () throws -> CapacityAccount

    /// Places the recording (its `length` bytes flushed in `files.data`), gives the capture's
    /// unused space back to the reserve and removes the capture's files. Call with the capture's
    /// granter stopped (or its owner dead). `control` gets the progress of a copy to another
    /// filesystem and may stop it (the take is then kept in the pool).
    /// - Returns: where the recording is; `problem` says why when it is kept in the pool (a
    ///   typed result: a kept take is not an error whose path happens to be in `recordings/`).
    func complete(_ files: CaptureFiles, journal: CaptureJournal, length: Int64,
                         whenTaken: RecordingPlacement.TakenDestination = .keepInPool,
                         control: OperationControl) throws -> RecordingPlacement.Outcome {
        var journal = journal
        var placement: RecordingPlacement.Outcome
        if journal.discarded == true || journal.placedAt != nil {
            placement = RecordingPlacement.Outcome(path: journal.placedAt ?? journal.destination,
                                                   identity: journal.placedIdentity,
                                                   problem: nil)
        } else if try FileSystem.isPresent(files.data) {
            // Whose the take is, before its file is cut: a `data` that is not its capture's own
            // is refused as it was found, never trimmed first (`RecordingOwner`).
            _ = try RecordingOwner.of(capture: files)
            journal.owed = try trimUnusedGrant(files, length: length)
            placement = try RecordingPlacement(layout: layout, access: access, calls: calls)
                .place(files, journal, length: length, whenTaken: whenTaken, control: control)
            journal.placedAt = placement.path
            journal.placedIdentity = placement.identity
            journal.phase = .completing
            try journal.save(files.journal, calls, access: access)
            CrashPoint.hit("finish.placed")
        } else {
            // Killed after the rename into place, before the journal recorded it: only recovery
            // comes here, once its decision saw the place hold the take, and it reports the
            // place it looked at (`CaptureObservation.placedPath`).
            placement = RecordingPlacement.Outcome(path: journal.destination, identity: journal.dataIdentity,
                                                   problem: nil)
        }
        // A copied (or discarded) recording's file goes back to the reserve whole.
        if try FileSystem.isPresent(files.data) {
            try giveBack(from: files.data, keeping: 0)
            try FileSystem.remove(files.data)
        }
        CrashPoint.hit("finish.reserveRebuilt")
        Self.removeFiles(of: files)
        if try FileSystem.isPresent(files.directory) {
            throw ProVideoError.system("rmdir", errno: ENOTEMPTY, path: files.directory)
        }
        try FileSystem.syncDirectory(layout.captures, calls)
        // Paid once the journal is gone, so a replay never pays twice (a kill just before loses
        // it: `replenish` restores it).
        if let owed = journal.owed { try growReserve(by: owed) }
        return placement
    }

    /// Discards a capture's recording and gives all of its space back to the reserve: its
    /// owner's cancel, or a start that failed.
    /// - Throws: the journal's read error other than a missing journal (the capture is then left
    ///   for salvage to decide on); what the discard throws.
    func discard(_ files: CaptureFiles) throws {
        let journal: CaptureJournal?
        do {
            journal = try CaptureJournal.load(files.journal)
        } catch let error as ProVideoError where error.errno == ENOENT {
            journal = nil
        }
        try discard(files, journal: journal)
    }

    /// Discards a capture whose `journal` was read (nil: it has none, killed or failed before
    /// the journal was durable).
    func discard(_ files: CaptureFiles, journal: CaptureJournal?) throws {
        guard var journal else {
            if try FileSystem.isPresent(files.data) { try giveBack(from: files.data, keeping: 0) }
            Self.removeFiles(of: files)
            return
        }
        try revokeCommitRecords(files)
        CrashPoint.hit("cancel.revoked")
        journal.discarded = true
        journal.placedAt = nil
        journal.phase = .completing
        try journal.save(files.journal, calls, access: access)
        CrashPoint.hit("cancel.journaled")
        _ = try complete(files, journal: journal, length: 0, control: .none)
    }

    /// Zeroes a discarded capture's commit records, durably, before its journal says
    /// discarded: a journal is a claim and a commit record that proves bytes outranks it
    /// (`RecoveryDecision`), so the record must stop proving them first. Killed between the
    /// two, the capture is a recording that committed nothing: discarded all the same.
    private func revokeCommitRecords(_ files: CaptureFiles) throws {
        guard try FileSystem.isPresent(files.commit) else { return }
        let commit = try FileDescriptor.open(files.commit, O_WRONLY | O_DSYNC)
        let zeros = [UInt8](repeating: 0, count: CaptureJournal.commitFileLength)
        try zeros.withUnsafeBytes { try commit.writeAll($0, at: 0, calls) }
    }

    /// Bytes given back to the reserve per step (`giveBack`): what a crash between a step's two
    /// calls can lose from the reserve until `replenish`, and what one hold of the reserve lock
    /// regrows while other captures' grants wait (a regrowth of 1 GiB took up to 608 ms beside
    /// a writer on ext4).
    static let returnStep: Int64 = 256 << 20

    /// Gives the bytes of a capture's file past `keep` back to the reserve, a step at a time:
    /// each step cuts the file, then grows the reserve by what that freed (best effort), so the
    /// file's size is always what is left to give: a crash between the two loses at most one
    /// step (restored by `replenish`) and never gives a byte twice. The cut is made outside the
    /// reserve lock: the file is this capture's alone (its granter has stopped, or its owner is
    /// dead), and freeing its blocks waits for the device's discards on a `discard` mount (a
    /// cut of 1 GiB took up to 1.2 s on ext4 beside a writer), which the grants of the captures
    /// still running must not wait behind. Meanwhile the pool's capacity reads that step short,
    /// never over (`CapacityAccount`). A reserve lock that stays taken for 30 s (`.busy`), or a
    /// reserve whose growth failed other than for space, loses the step already cut, as a crash
    /// there would (`replenish` restores it), and stops the give-back with that error.
    ///
    /// Where grants exchange extents (`ExtentExchange`), a step whose bytes were never written
    /// (FIEMAP: unwritten extents) goes back by exchange instead, freeing nothing
    /// (`exchangeBack`); written bytes never go back into the reserve, whose next grant would
    /// hand their old content to another capture's file: they are cut as above.
    func giveBack(from data: String, keeping keep: Int64) throws {
        while true {
            let size = Int64(try FileSystem.facts(data).size)
            guard size > keep else { return }
            let amount = min(size - keep, Self.returnStep)
            let fd = try FileDescriptor.open(data, O_RDWR)
            if let exchange = reserve.exchange, exchange.isOn {
                let unwritten = reserve.rounded(try fd.unwrittenTail(from: size - amount, to: size))
                if unwritten < size, try exchangeBack(fd, from: unwritten, to: size, exchange) { continue }
            }
            try fd.truncate(size - amount, calls)
            try growReserve(by: amount)
        }
    }

    /// Moves the capture's never-written `[start, end)`, its file's tail, to the end of the
    /// reserve by extent exchange, under the size lock: the reserve is extended by a hole, the
    /// hole and the tail are exchanged, and the capture's file, whose tail is now the hole, is
    /// cut; nothing is allocated or freed; then the reserve is flushed. A crash between the steps leaves the reserve and the
    /// captures' grants over `initialCapacity`, which the repair at open cuts (at worst freeing
    /// the step's blocks, as a crash in a cut-and-grow step loses them until `replenish`).
    /// - Returns: false, having changed nothing, when the capacity the captures hold cannot be
    ///   counted or the reserve is already over its share (the caller cuts and grows instead), or when
    ///   the filesystem refused the exchange (`exchange` is then turned off).
    /// - Throws: `.busy` when a lock stayed taken for 30 s; ftruncate's and fdatasync's errors.
    private func exchangeBack(_ data: FileDescriptor, from start: Int64, to end: Int64,
                              _ exchange: ExtentExchange) throws -> Bool {
        let amount = end - start
        let moved: FileDescriptor? = try lock.withReserveSize {
            guard let excess = try counted({ try $0.excess }) else { return nil }
            // The step moves bytes from the capture's grant to the reserve, so the sum stays as
            // it is: within `initialCapacity` unless it was over already (then cut and grow
            // gives back only what fits).
            guard excess == 0, amount % reserve.unit == 0 else { return nil }
            let reserveFD = try reserve.open(nocow: false)
            let size = try reserve.size()
            try reserveFD.truncate(size + amount, calls)
            let rc = calls.exchangeRange(reserveFD.rawValue, data.rawValue, start, size, amount)
            if rc < 0 {
                try reserveFD.truncate(size, calls)
                exchange.refused(errno: -rc, path: reserve.path)
                return nil
            }
            try data.truncate(start, calls)
            return reserveFD
        }
        guard let moved else { return false }
        // As a grown reserve is, its new size survives a power cut before the step is done; but
        // outside the size lock, which every exchanging grant takes: a flush waits for the
        // filesystem's log, and the grants must not wait with it.
        try moved.sync(calls)
        return true
    }

    /// Bytes of a finishing capture's unused grant that are freed on the filesystem rather than
    /// given to the reserve until the capture's journal is gone: the journal's rewrite then
    /// finds a block and an inode even on a full filesystem (XFS allocates inodes in chunks).
    static let completionRoom: Int64 = 1 << 20

    /// Gives a finishing capture's unused grant (its file past the recording, rounded up to the
    /// allocation unit) back to the reserve, all but `completionRoom` bytes, which it frees.
    /// - Returns: the bytes freed and owed to the reserve.
    private func trimUnusedGrant(_ files: CaptureFiles, length: Int64) throws -> Int64 {
        let keep = reserve.rounded(length)
        let room = min(max(Int64(try FileSystem.facts(files.data).size) - keep, 0), Self.completionRoom)
        try giveBack(from: files.data, keeping: keep + room)
        try FileDescriptor.open(files.data, O_RDWR).truncate(keep, calls)
        return room
    }

    /// Grows the reserve by up to `bytes`, never past `initialCapacity` less what the captures
    /// hold. Holds the size lock throughout and the reserve lock only to count: the grants of
    /// running captures claim beside it (issue 44). A filesystem without the space is a fact,
    /// answered best effort (the reserve stays smaller; `replenish` restores it later); any
    /// other failure leaves the reserve's growth unknown and is thrown, so the give-back stops
    /// there, with the capture still journaled for its replay.
    /// - Throws: `.busy` when a lock stayed taken for 30 s; what `refill` throws but
    ///   `.notEnoughSpace` (a failed read of the reserve's size, `fallocate`'s or the flush's
    ///   `EIO`).
    private func growReserve(by bytes: Int64) throws {
        try lock.withReserveSize {
            // Grants that cannot be counted are not given away: unknown, not zero, nothing is
            // given back until `replenish` can count them.
            guard let missing = try counted({ try $0.missing }) else { return }
            let grow = min(bytes, missing) / reserve.unit * reserve.unit
            guard grow > 0 else { return }
            do {
                _ = try reserve.refill(by: grow)
            } catch let error as ProVideoError where error.code == .notEnoughSpace {
                return
            }
        }
    }

    /// A figure of the account read under the reserve lock; nil when the account cannot be
    /// made (a grant that cannot be counted, a file that cannot be read): the give-back then
    /// adds nothing.
    /// - Throws: `.busy` when the reserve lock stayed taken for 30 s.
    private func counted(_ figure: (CapacityAccount) throws -> Int64) throws -> Int64? {
        do {
            return try lock.withReserve { try figure(account()) }
        } catch let error as ProVideoError where error.code == .busy {
            throw error
        } catch {
            return nil
        }
    }

    /// Removes a capture's files and its directory, ignoring what is gone: `data`, then the
    /// journal, then the commit record, then `progress` (its liveness lock) last. A process
    /// that opens the pool meanwhile finds either a locked `progress` (alive: left alone) or
    /// no `progress` and nothing of the take (`RecoveryDecision`: the remains removed), never a
    /// journal beside a free lock: a finishing take never looks dead.
    static func removeFiles(of files: CaptureFiles) {
        for file in [files.data, files.journal + ".tmp", files.journal, files.commit, files.progress] {
            // A file that will not go stops the removal: `progress` never goes while the
            // journal is left beside it (`remove` already ignores what is gone).
            do { try FileSystem.remove(file) } catch { return }
        }
        // A directory that will not go (a file someone else planted in it) holds nothing of
        // the take: the next open finds no `progress` and removes the remains.
        do { try FileSystem.removeDirectory(files.directory) } catch { /* left for the next open */ }
    }
}

import FoundationEssentials
import Glibc
import ProVideoSystem
import ProVideoJournal

/// Starting a capture in its own `captures/<id>/` (`CaptureFiles`); completing, discarding and
/// salvaging are in Recovery/. Each step is ordered so that a process killed at any point leaves
/// a state the next `Pool.open` finishes the same way, for that capture alone:
///
/// 1. start (under the mutation lock): admission, then the capture's files and its journal
///    written durably, then its first grant from the reserve (`ReserveGrants`). A granter
///    thread keeps granting ahead of the write head while it records.
/// 2. finish: data flushed and its length committed, then the unused grant given back to the
///    reserve (all but `completionRoom`, freed for the journal's rewrite), then the recording
///    placed (renamed to the destination, or copied there and verified, or kept in
///    `recordings/`), then the journal records `placedAt` and what is `owed`, then a copied
///    file is given back and removed, then the capture's files are removed (`progress`, its
///    liveness lock, last), then what is owed is paid to the reserve.
/// A killed capture is salvaged the same way from its last committed length.
///
/// A value the pool hands what it needs (`Pool.captureStart`): its directory, layout, lock,
/// access rules and system calls, and as closures what only the pool holds (its configuration,
/// which a start reloads; its dead captures' salvage; the takes waiting to land, which no new
/// take may claim; its busy error).
struct CaptureStart {
    /// The pool's directory.
    let path: String
    let layout: PoolLayout
    let lock: PoolLock
    let access: PoolAccess
    let calls: SystemCalls
    /// The pool's direct-I/O alignment for writes, in bytes.
    let alignment: Int
    let slowestGrant: SlowestGrant
    let completion: CaptureCompletion
    /// The pool's `Reserve` value for a file (`Pool.reserve`).
    let reserve: (String) -> Reserve
    /// Reloads `pool.json` and keeps it as the pool's configuration (another process may have
    /// resized the pool since it was opened).
    let reloadConfiguration: () throws -> PoolConfiguration
    /// Salvages the captures whose recorder died (`Pool.salvageDeadCaptures`), under the
    /// mutation lock.
    let salvageDeadCaptures: () throws -> Void
    /// The held recordings waiting to land (`Landing.waiting`) and the hint a refusal adds
    /// when they hold space the reserve needs (`Landing.hint`).
    let waitingToLand: () throws -> [HeldRecording]
    let landingHint: () -> String
    let busyError: (_ busy: BusyReasons, _ action: String) -> ProVideoError

    /// `Pool.startCapture(to:options:owner:)`, which says what it throws.
    func start(to destination: String, options: CaptureOptions, owner: uid_t?) throws -> Capture {
        if owner != nil && !ProcessIdentity.isRoot {
            throw ProVideoError(.permissionDenied, "only root starts a capture for another user", path: destination)
        }
        // A negative bitrate would lower the sum the other captures are admitted against.
        guard options.bitrate >= 0 else {
            throw ProVideoError(.invalidArgument, "a capture's bitrate cannot be \(options.bitrate) bit/s", path: destination)
        }
        let destination = try CaptureDestination(poolDirectory: path).resolve(destination)
        let claim = try CaptureClaim(poolLockPath: layout.lock, access: access)
        let files = layout.capture(Self.newCaptureID())
        var journal = CaptureJournal(id: files.id, destination: destination, alignment: alignment,
                                     bitrate: options.bitrate, engine: "", phase: .starting,
                                     startedAt: Date().timeIntervalSince1970, pid: ProcessIdentity.pid)
        journal.landInBackground = try options.landing.landsInBackground(destination, poolDirectory: path)
        let reserveFile = reserve(layout.reserve)
        // The capture's own claim slot (`ReserveClaims`), for its start's grant and then its
        // granter's: the start's cut is its granter's cutter's, made after the mutation lock is
        // let go, when another start may claim through the pool's own lock.
        let grants = ReserveGrants(reserve: reserveFile, lock: try PoolLock(path: layout.lock, access: access))
        var step: Int64 = 0, room: Int64 = 0, sharers = 1
        var granted: Int64 = 0
        // The start's bytes in the capture's file that the reserve still holds, until the
        // granter's cutter takes them.
        var uncut: Int64 = 0
        let configuration = try lock.withMutation { () throws -> PoolConfiguration in
            let busy = try lock.heldByOthers()
            guard !busy.contains(.adjustingCapacity), try claim.holdCapturing() else {
                throw busyError(busy.subtracting(.replenishing), "start a capture")
            }
            do {
                try salvageDeadCaptures()
                // The capacity now, not at open: another process may have resized the pool.
                let current = try reloadConfiguration()
                step = options.grantStep(unit: reserveFile.unit, capacity: current.initialCapacity)
                let census = try CaptureCensus.take(of: layout, calls)
                try CaptureDestination.refuseTaken(destination, running: census.running, waiting: try waitingToLand())
                let admission = CaptureAdmission(captureLimit: current.captureLimit, bandwidth: current.bandwidth,
                                                 poolPath: path, capturesDirectory: layout.captures)
                try admission.admit(options, running: census.running, undecided: census.undecided, journal: &journal)
                let reserveSize = try reserveFile.size()
                guard reserveSize > 0 else {
                    let hint = landingHint()
                    throw ProVideoError(.notEnoughSpace, "the pool has no remaining capacity"
                                        + (census.running.isEmpty ? "" : " (\(census.running.count) running capture(s) hold it)")
                                        + hint, path: path, remedies: Self.fullPoolRemedies(hint))
                }
                try createCaptureFiles(files, &journal, claim: claim, owner: owner, btrfs: current.storage.isBtrfs)
                CrashPoint.hit("capture.journaled")
                let data = try FileDescriptor.open(files.data, O_RDWR)
                // The lead the granter keeps: a capture that started with less depended on its
                // granter's first grant within that much stream, and takes started beside
                // running captures (whose grants and returns held the reserve lock for up to 2 s)
                // refused frames awaiting it.
                // The reserve's size stands for its room: claims in flight make it larger, by
                // at most the steps of the running captures' grants.
                sharers = census.running.count + 1
                let lead = GrantLead(step: step, bitrate: options.bitrate, room: reserveSize, sharers: sharers,
                                     slowestGrant: slowestGrant.slowest(now: MonotonicTime.now())).fill
                let claimed = try grants.claim(lead, for: data, granted: 0, sharing: true)
                (granted, room) = (claimed.bytes, claimed.room)
                if granted > 0, try grants.allocate(granted, to: data, granted: 0) { uncut = granted }
                guard granted > 0 else {
                    throw ProVideoError(.notEnoughSpace, "the pool has no remaining capacity: the running captures "
                                        + "hold it", path: path, remedies: Self.fullPoolRemedies(""))
                }
                try FileSystem.syncDirectory(files.directory, calls)
                try FileSystem.syncDirectory(layout.captures, calls)
                return current
            } catch {
                throw abandonStart(after: error, uncut: uncut, grants, files, claim)
            }
        }
        var granter: CaptureGranter?
        do {
            let data = try FileDescriptor.open(files.data, O_RDWR, direct: true)
            // The start's cut is the granter's cutter's, as every grant's is: it frees blocks,
            // which on a `discard` mount waits for the device (cuts took up to 16 s near the
            // disk's limit), and made under the mutation lock, or before the start returned, it
            // held the pool's other starts behind it (a take switch beside nine other streams
            // failed: "another thread of this process has held the pool's lock for 30 s"). Until
            // the cut its bytes stay claimed in the capture's slot, so every figure counts them once.
            let started = try CaptureGranter(grants: grants,
                                         data: try FileDescriptor.open(files.data, O_RDWR), granted: granted,
                                         uncut: uncut, step: step,
                                         bitrate: options.bitrate, room: room, sharers: sharers,
                                         countSharers: { [captures = layout.captures] in Self.countCaptures(in: captures) },
                                         slowest: slowestGrant)
            granter = started
            uncut = 0
            let host = CaptureHost(
                calls: calls, optimalIOSize: configuration.storage.device.optimalIOSize, reserve: reserveFile,
                spare: access.spare,
                complete: { [completion] files, journal, length, control in
                    let placement = try completion.complete(files, journal: journal, length: length, control: control)
                    // A take kept in the pool is finished, and `finish` says why it is there.
                    if let problem = placement.problem { throw problem }
                    return (placement.path, placement.landing)
                },
                discard: { [completion] files in try completion.discard(files) })
            let capture = try Capture(host: host, files: files, journal: journal, claim: claim, data: data,
                                      granter: started, options: options)
            journal.engine = capture.statistics.engine
            journal.phase = .recording
            try journal.save(files.journal, calls, access: access)
            return capture
        } catch {
            // A capture that never came to be has no deinit to stop its granter's thread.
            _ = granter?.stop()
            throw abandonStart(after: error, uncut: uncut, grants, files, claim)
        }
    }

    /// Undoes a start that failed with `error`: the reserve gives up the `uncut` bytes the
    /// capture's file took before the discard gives the file back, then the claim is released.
    /// - Returns: `error`, its message adding each undo that failed too (`Rollback`): the
    ///   capture's remains are then `recover`'s, and the reserve's shortfall `replenish`'s.
    private func abandonStart(after error: Error, uncut: Int64, _ grants: ReserveGrants, _ files: CaptureFiles,
                              _ claim: CaptureClaim) -> Error {
        var failure = error
        if uncut > 0 {
            failure = Rollback.keepingFirst(failure, restoring: "the reserve's cut of the \(uncut) bytes the capture's file took") {
                try grants.cut(uncut)
            }
        }
        failure = Rollback.keepingFirst(failure, restoring: "the pool without the capture's files (\(files.directory))",
                                        remedy: .recover) {
            if try FileSystem.isPresent(files.directory) { try completion.discard(files) }
        }
        claim.release()
        return failure
    }

    /// Creates every file a capture needs, so that a filesystem out of inodes or space refuses
    /// the capture here, with the reserve whole and nothing left behind: `captures/<id>/`,
    /// `progress` and `commit` with their blocks allocated (their first writes then need none),
    /// the empty `data` (NOCOW on btrfs before its first block), and the journal: 5 inodes,
    /// with one more left for the later steps (a journal rewrite), the journal recording which
    /// files `data` and `commit` are (`dataIdentity`, `commitIdentity`). The rewrites' blocks come
    /// from the pool's spare when the filesystem is full. Locks the capture for `claim`.
    private func createCaptureFiles(_ files: CaptureFiles, _ journal: inout CaptureJournal, claim: CaptureClaim,
                                    owner: uid_t?, btrfs: Bool) throws {
        let stepsAfterStart: Int64 = 1
        do {
            try access.makeDirectory(layout.captures)
            try access.makeDirectory(files.directory, keepingOwner: true)
            let commitBytes = Int64(CaptureJournal.commitFileLength)
            for (file, bytes) in [(files.progress, Int64(alignment)), (files.commit, commitBytes)] {
                let fd = try access.openCreating(file, O_RDWR)
                let rc = calls.fallocate(fd.rawValue, false, 0, bytes)
                if rc < 0 { throw ProVideoError.system("fallocate", errno: -rc, path: file) }
            }
            try claim.holdCapture(files)
            let data = try reserve(files.data).open(create: true, nocow: btrfs, recorders: true)
            if let owner {
                // Made by root, empty and in a directory only the pool's members enter: given
                // to its user before a byte is written, as if that user had made them.
                try FileDescriptor.open(files.directory, O_RDONLY | O_DIRECTORY).setOwner(owner, access.group)
                try data.setOwner(owner, access.group)
                try data.setMode(PoolAccess.ownFileMode)
            }
            journal.dataIdentity = FileIdentity(try data.facts())
            journal.commitIdentity = FileIdentity(try FileSystem.facts(files.commit))
            try journal.save(files.journal, calls, access: access)
            guard try FileSystem.freeInodes(path) >= stepsAfterStart else { throw ProVideoError(.notEnoughSpace, "", errno: ENOSPC) }
        } catch {
            CaptureCompletion.removeFiles(of: files)
            guard let failure = error as? ProVideoError, failure.code == .notEnoughSpace else { throw error }
            var refusal = failure
            let space = "the filesystem of \(path) has no room for a capture's own files (\(failure.message)); free some "
                + "space there and try again: nothing was recorded"
            do {
                refusal.message = try FileSystem.freeInodes(path) < stepsAfterStart + 5
                    ? "the filesystem of \(path) has too few free inodes for a capture's own files (it needs 6; "
                        + "`df -i` shows them); delete some files there and try again: nothing was recorded"
                    : space
            } catch {
                // Which of the two ran out is unknown: both are said.
                refusal.message = space + "; its free inodes cannot be read (\((error as? ProVideoError)?.message ?? "\(error)")), "
                    + "so `df -i` there may show that it ran out of inodes instead"
            }
            throw refusal
        }
    }

    /// The entries of `captures/`, each a running capture or its remains (a stray entry counts
    /// too: more sharers only shorten the leads); nil when it cannot be listed.
    /// What frees room for a capture: landing the takes that hold it (when `landingHint` named
    /// some), a replenish, a larger pool.
    private static func fullPoolRemedies(_ landingHint: String) -> [ProVideoError.Remedy] {
        (landingHint.isEmpty ? [] : [.land]) + [.replenish, .resize]
    }

    private static func countCaptures(in directory: String) -> Int? {
        do {
            return try FileSystem.entries(directory, consequence: "the leads keep their last share")?.count
        } catch {
            return nil
        }
    }

    private static func newCaptureID() -> String {
        String(UInt64(Date().timeIntervalSince1970 * 1000), radix: 36) + "-" + String(UInt32.random(in: 0...UInt32.max), radix: 36)
    }
}

import FoundationEssentials
import Glibc
import ProVideoSystem

/// What `provideo list` shows.
public struct PoolListing: Codable, Sendable {
    /// Every running capture, in every process.
    public var captures: [PoolStatus.Capture]
    /// Recordings kept in the pool because their destination could not take them.
    public var recordings: [HeldRecording]
    /// Recordings salvaged from dead recorders, oldest first, and where they went.
    public var recovered: [SalvagedRecording]
    /// Why the salvage log (`recovered.json`) could not be read, when it could not: `recovered`
    /// is then empty for want of the log, not because nothing was salvaged.
    public var recoveredUnreadable: String?
    /// The recordings waiting to land, with their progress (also in `recordings`).
    package var landing: [LandingProgress]?
    /// true while a lander of this pool waits for a fleet slot (`PoolStatus.landingWaitsForFleetSlot`).
    package var landingWaitsForFleetSlot: Bool?
}

extension Pool {
    /// Moves a recording the pool holds (see `listing()`) to `destination`, or to the
    /// destination it was meant for: a rename on the pool's filesystem, else a verified copy
    /// (see `RecordingCopy`) after which the pool's file is deleted. Run `replenish()`
    /// afterwards to turn the freed space back into reserve. A take waiting to land
    /// (`landing`) is moved only while no `provideo land` transfers it, and a partial copy an
    /// earlier transfer or move left is removed.
    /// - Returns: the path the recording now has.
    /// - Throws: `.invalidArgument` when `held` is not a recording the pool holds; `.busy`
    ///   when a landing is transferring it; `.invalidDestination`, `.destinationExists`
    ///   (nothing is overwritten); a copy error (the recording stays held and the move can be
    ///   retried); `.ioError` "placed at DEST, but the directory could not be flushed" when
    ///   the rename succeeded (the recording is at DEST and no longer held).
    @discardableResult
    public func moveHeldRecording(_ held: String, to destination: String? = nil) throws -> String {
        try moveHeldRecording(held, to: destination, control: .none)
    }

    /// `moveHeldRecording(_:to:)`, with a control that gets a copy's progress and may stop it
    /// (`.cancelled`: nothing is left at the destination and the recording stays held).
    @discardableResult
    package func moveHeldRecording(_ held: String, to destination: String?, control: OperationControl) throws -> String {
        let held = FileSystem.absolute(held)
        let notePath = held + ".json"
        guard FileSystem.parent(of: held) == layout.recordings, try FileSystem.isPresent(held),
              var note = try heldRecordings().first(where: { $0.path == held }) else {
            throw ProVideoError(.invalidArgument, "\(held) is not a recording this pool holds", path: held,
                                remedies: [.list])
        }
        let target = try CaptureDestination(poolDirectory: path).resolve(destination ?? note.destination)
        // Rewritten below with `movingTo`: the note is readable again from then on.
        note.noteUnreadable = nil
        return try lock.withMutation {
            // Opened once (beneath the pool, not followed, one link): the file that is checked
            // is the file that moves. Held open for writing, it also carries the transfer's own
            // lock (`LandingTransfer`) until the move is done: a lander never publishes a second
            // copy of a take moved under it.
            let file = try FileDescriptor.open(held, note.landing == true ? O_RDWR : O_RDONLY | O_NONBLOCK)
            if note.landing == true, try !file.lock(0, 1, wait: false) {
                throw ProVideoError(.busy, "a landing is transferring \(held) now; move it once that landing stops "
                                    + "(or let it land)", path: held)
            }
            let length = try Self.checkedLength(of: file, note: note)
            let owner = try RecordingOwner.of(file)
            // An earlier move toward another target was killed mid-copy: its temporary is
            // garbage no later move reuses (each target has its own), so it goes now.
            if let previous = note.movingTo, previous != target {
                try removeAbandonedCopy(of: held, toward: previous, owner: owner)
            }
            note.movingTo = target
            try note.save(notePath, calls, access: access)
            let directory = try owner.acting { try DirectoryHandle.open(FileSystem.parent(of: target)) }
            var unflushed: ProVideoError?
            do {
                let outcome = try RecordingMove(calls: calls, control: control).move(
                    file, named: FileSystem.lastComponent(of: held), in: try DirectoryHandle.open(layout.recordings),
                    length: length, to: FileSystem.lastComponent(of: target), in: directory, owner: owner,
                    tag: FileSystem.lastComponent(of: held))
                if case .copied = outcome { try FileSystem.remove(held) }
            } catch let placed as RecordingMove.PlacedUnflushed {
                // Renamed into place: the pool no longer holds it, so its note goes as after a move.
                unflushed = placed.error
            }
            try FileSystem.remove(notePath)
            if note.landing == true {
                try removePartialLanding(of: held, at: note.destination, owner: owner, movedTo: target)
            }
            try FileSystem.syncDirectory(layout.recordings, calls)
            if let unflushed { throw unflushed }
            return target
        }
    }

    /// A held recording's length: its file's size, which its note must agree with. A note is a
    /// group-writable file: a length it alone claims could publish a truncated take and delete
    /// the whole.
    /// - Throws: `.corruptState` naming both sizes when they differ.
    static func checkedLength(of file: FileDescriptor, note: HeldRecording) throws -> Int64 {
        let facts = try file.facts()
        guard facts.linkCount == 1 else {
            throw ProVideoError(.corruptState, "\(file.path) has \(facts.linkCount) hard links: it is not a recording the "
                                + "pool made; it is left as it is", path: file.path)
        }
        let size = facts.size
        guard size <= UInt64(Int64.max), Int64(size) == note.length else {
            throw ProVideoError(.corruptState, "\(file.path) has \(size) bytes but its note says \(note.length); it is "
                                + "left in the pool as it is: check the file, then fix `length` in \(file.path).json",
                                path: file.path)
        }
        return Int64(size)
    }

    /// What a take waiting to land leaves when it is moved instead: its progress record, and
    /// the temporary file an interrupted transfer left beside the landing destination (removed
    /// as the take's owner, as `LandingTransfer` made it; a move to that same destination
    /// reused the name and left nothing).
    private func removePartialLanding(of held: String, at landing: String, owner: RecordingOwner, movedTo target: String) throws {
        try FileSystem.remove(LandingRecord.path(forHeld: held))
        guard target != landing else { return }
        try removeAbandonedCopy(of: held, toward: landing, owner: owner)
    }

    /// Removes the temporary a copy of `held` toward `target` left when it was stopped
    /// (`RecordingCopy.temporaryPath`), if any. Done as the recording's owner, who made it: the
    /// directory is the user's, and root must never follow a path a user could swap.
    private func removeAbandonedCopy(of held: String, toward target: String, owner: RecordingOwner) throws {
        let name = RecordingCopy.temporaryName(for: FileSystem.lastComponent(of: target), tag: FileSystem.lastComponent(of: held))
        try owner.acting {
            guard let directory = try? DirectoryHandle.open(FileSystem.parent(of: target)) else { return }
            try directory.remove(name)
        }
    }

    /// Forgets a move of `held` that was killed before its copy was published (the note's
    /// `movingTo` does not exist): removes the copy's temporary, then clears `movingTo`. When
    /// the temporary cannot be removed now (its directory unreachable), `movingTo` stays so a
    /// later open tries again.
    private func forgetUnfinishedMove(of held: String, note: HeldRecording, notePath: String) throws {
        guard let target = note.movingTo else { return }
        // A take waiting to land shares its landing destination's temporary with
        // `provideo land`, which may be transferring it now: that file is the lander's.
        let landersOwn = note.landing == true && target == note.destination
        if !landersOwn {
            // Whose the temporary is must be known before it is removed, as they would: a
            // recording that cannot be opened, or whose owner cannot be told (a second link, a
            // mode others may write), keeps `movingTo`, so nothing is forgotten that was not done.
            do {
                let owner = try RecordingOwner.of(try FileDescriptor.open(held, O_RDONLY | O_NONBLOCK))
                try removeAbandonedCopy(of: held, toward: target, owner: owner)
            } catch {
                return
            }
        }
        var note = note
        note.movingTo = nil
        try note.save(notePath, calls, access: access)
    }

    /// The note `<recording>.json` of a held recording; nil when `path` names no note or the
    /// note is gone. The recording is the file the note is named for, whatever `path` the note
    /// says: a note is group-writable, and a path taken from it could name any file its writer
    /// can read (Docs/SECURITY.md). A note that cannot be read or decoded still stands for its
    /// recording (`noteUnreadable`): a failed read is never "nothing held".
    static func heldNote(_ path: String) -> HeldRecording? {
        guard path.hasSuffix(".json") else { return nil }
        let recording = String(path.dropLast(".json".count))
        var note: HeldRecording
        do {
            note = try JSONDecoder().decode(HeldRecording.self, from: Data(try FileSystem.readSmallFile(path)))
        } catch let error as ProVideoError where error.errno == ENOENT {
            return nil
        } catch {
            return unreadableNote(path, recording: recording, error: error)
        }
        note.path = recording
        if !note.destination.hasPrefix("/") {
            // Relative, it would name a file in whatever directory `land` or `move` runs in.
            note.reason = "its note is corrupt (destination '\(note.destination)' is not an absolute path): "
                + "move it to a destination. " + note.reason
            note.destination = ""
        }
        if !(0...Pool.maximumCapacity).contains(note.length) {
            // An impossible length: the file's own size stands in (sizes come from `fstat`);
            // one that cannot be read is said, not shown as 0 (`checkedLength` refuses a move
            // either way).
            let corrupt = "its note is corrupt (length \(note.length))"
            do {
                note.length = Int64(clamping: try FileSystem.facts(note.path).size)
                note.reason = "\(corrupt); the file has \(note.length) bytes. " + note.reason
            } catch {
                note.reason = "\(corrupt) and the file's size cannot be read (\((error as? ProVideoError)?.message ?? "\(error)")). "
                    + note.reason
                note.length = 0
            }
        }
        return note
    }

    /// What stands for a held recording whose note cannot be read (`error`) or is gone (nil):
    /// its file's own size, no destination, and why.
    private static func unreadableNote(_ path: String, recording: String, error: Error?) -> HeldRecording {
        let cause = error.map { "cannot be read (\(($0 as? ProVideoError)?.message ?? "\($0)"))" } ?? "is missing"
        var reason = "its note \(path) \(cause); where it was meant to go is unknown: move it to a destination"
        var length: Int64 = 0
        do {
            length = Int64(clamping: try FileSystem.facts(recording).size)
        } catch {
            reason += "; its size cannot be read either (\((error as? ProVideoError)?.message ?? "\(error)"))"
        }
        return HeldRecording(path: recording, destination: "", length: length, reason: reason, noteUnreadable: true)
    }

    /// Every recording `recordings/` holds: one per note, in the order of their names
    /// (`heldNote`), then each file without a note whose name is no companion's (its note
    /// removed by other hands), which stands with `noteUnreadable`: the take is there. A
    /// companion left alone (a landing record a killed `forgetLanded` did not reach) is none.
    /// - Throws: `.ioError` when `recordings/` exists and cannot be listed or looked at:
    ///   "nothing held" is said on proof only (a destroy would remove the pool under them).
    func heldRecordings() throws -> [HeldRecording] {
        guard let names = try FileSystem.entries(layout.recordings, consequence: "what the pool holds is unknown") else {
            return []
        }
        let present = Set(names)
        let noted = names.filter { $0.hasSuffix(".json") }.sorted().compactMap { Self.heldNote(layout.recordings + "/" + $0) }
        let companionSuffixes = HeldRecording.companions(of: "")
        let noteless = names.filter { name in
            !present.contains(name + ".json") && !companionSuffixes.contains { name.hasSuffix($0) }
        }.sorted().map { name in
            let recording = layout.recordings + "/" + name
            return Self.unreadableNote(recording + ".json", recording: recording, error: nil)
        }
        return noted + noteless
    }

    /// Finishes a `moveHeldRecording` that was killed: after the rename, only the note is left;
    /// after a copy's final rename, the pool's copy is identical to the destination; before it,
    /// the target does not exist and the move is forgotten (`forgetUnfinishedMove`).
    func finishKilledMoves() throws {
        // A listing that fails finishes nothing (no action on the unknown); `heldRecordings`,
        // which `list`, `land` and `destroy` read, says why.
        let files = (try? FileManager.default.contentsOfDirectory(atPath: layout.recordings)) ?? []
        // A note rewritten (`movingTo`) when the power went, before its rename: the note itself
        // is intact, the temporary is garbage (found by Tools/powerloss). Garbage only on proof
        // that no one is writing it: a move writes its note under the mutation lock this open
        // holds, a finishing capture keeps its take with a note while it holds `capturing`.
        // Removed beside a running capture, a finishing take's note lost its temporary before
        // the rename, and its `record` failed (the fleet run, 1 take in 160, twice).
        let temporaries = files.filter { $0.hasSuffix(".json.tmp") }
        if !temporaries.isEmpty, try !lock.heldByOthers().contains(.capturing) {
            for name in temporaries { try FileSystem.remove(layout.recordings + "/" + name) }
        }
        for name in files where name.hasSuffix(".json") {
            let notePath = layout.recordings + "/" + name
            guard let note = Self.heldNote(notePath), let target = note.movingTo else { continue }
            let held = String(notePath.dropLast(".json".count))
            let targetPresent: Bool, heldPresent: Bool
            do {
                targetPresent = try FileSystem.isPresent(target, calls)
                heldPresent = try FileSystem.isPresent(held, calls)
            } catch {
                // Unknown is not absent: a target or a take that cannot be looked at (EIO, a
                // root-squashed NFS) leaves the move as it is, its note and its temporary, for
                // the next open (read as absent, the move was forgotten, or the note removed).
                continue
            }
            guard targetPresent else {
                try forgetUnfinishedMove(of: held, note: note, notePath: notePath)
                continue
            }
            if heldPresent {
                // The target is looked at as the recording's owner, who moved it there.
                let source = try FileDescriptor.open(held, O_RDONLY | O_NONBLOCK)
                let owner = try RecordingOwner.of(source)
                let copied = try owner.acting { () -> Bool in
                    guard let directory = try? DirectoryHandle.open(FileSystem.parent(of: target)) else { return false }
                    return try RecordingCopy.copy(of: source, length: Int64(try source.facts().size),
                                                  at: FileSystem.lastComponent(of: target), in: directory, calls: calls,
                                                  control: .none) != nil
                }
                guard copied else { continue }
                try FileSystem.remove(held)
            }
            try FileSystem.remove(notePath)
            try FileSystem.syncDirectory(layout.recordings, calls)
        }
    }

    /// The captures in progress and the recordings the pool holds.
    public func listing() throws -> PoolListing {
        let held = try heldRecordings()
        // An unreadable salvage log lists nothing, and says why: none is not "none salvaged".
        var recovered: [SalvagedRecording] = [], unreadable: String?
        do {
            recovered = try recoveredRecordings()
        } catch let error as ProVideoError {
            unreadable = error.message
        }
        // One look at the captures and the landing: the status's, not a second read beside it.
        let status = try status()
        return PoolListing(captures: status.captures, recordings: held, recovered: recovered,
                           recoveredUnreadable: unreadable, landing: status.landing,
                           landingWaitsForFleetSlot: status.landingWaitsForFleetSlot)
    }

    /// The salvage log (`recovered.json`), oldest first; empty when there is none.
    /// - Throws: what `RecoveredLog.entries()` throws.
    package func recoveredRecordings() throws -> [SalvagedRecording] { try recoveredLog.entries() }

    var recoveredLog: RecoveredLog { RecoveredLog(file: layout.recoveredLog, calls: calls, access: access) }
}

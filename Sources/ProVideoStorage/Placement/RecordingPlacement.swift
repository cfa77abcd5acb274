import FoundationEssentials
import Glibc
import ProVideoSystem
import ProVideoJournal

/// Placing a finished recording: where it goes and how (Docs/CAPTURE-LIFECYCLE.md). A value
/// handed what it needs of the pool (its layout, its access rules, its system calls) by the
/// step that completes a capture; it knows nothing else of the pool.
struct RecordingPlacement {
    let layout: PoolLayout
    let access: PoolAccess
    let calls: SystemCalls

    /// Where a recording went.
    struct Outcome {
        var path: String
        /// Which file at `path` the recording is: what proves it placed (`CaptureJournal.placedIdentity`);
        /// nil where no journal of this version recorded it.
        var identity: FileIdentity?
        /// Set when the recording could not reach its destination and stays in the pool.
        var problem: ProVideoError?
        /// The recording stays in the pool to land at its destination in the background.
        var landing = false
    }

    /// What to do when the destination exists at the end.
    enum TakenDestination { case keepInPool, recoveredSibling }

    /// Places the recording, `length` bytes of `files.data`: renamed to its destination on the
    /// pool's filesystem, else copied there and verified, else kept in `recordings/`. Every step
    /// at the destination acts as the capture's owner (`RecordingOwner`), through its directory
    /// resolved once as that owner (`DirectoryHandle`): a salvage run by root places a take only
    /// where its recorder could, and a directory the recorder can no longer write keeps the take
    /// in the pool (Docs/SECURITY.md). `control` gets a copy's progress and may stop it.
    func place(_ files: CaptureFiles, _ journal: CaptureJournal, length: Int64,
               whenTaken: TakenDestination, control: OperationControl) throws -> Outcome {
        let destination = journal.destination
        let owner = try RecordingOwner.of(capture: files)
        let directoryPath = FileSystem.parent(of: destination), name = FileSystem.lastComponent(of: destination)
        let directory: DirectoryHandle
        do {
            directory = try owner.acting { try DirectoryHandle.open(directoryPath) }
        } catch let error as ProVideoError {
            let why = error.errno == ENOENT || error.errno == ENOTDIR ? "no longer exists"
                : "cannot be reached by its recorder \(owner.name) (\(error.message))"
            return try keepInPool(files, journal, length: length, owner: owner, problem: ProVideoError(
                .invalidDestination, "the destination's directory \(directoryPath) \(why)", path: destination))
        }
        // On the pool's filesystem the file itself becomes the recording: cut and sealed first.
        // Elsewhere it is copied and goes back to the reserve whole.
        let sameFilesystem = try directory.isOnDevice(of: FileSystem.facts(layout.directory))
        if sameFilesystem { try sealRecording(files, length: length, owner: owner, held: false) }
        if !sameFilesystem && journal.landInBackground == true {
            return try queueForLanding(files, journal, length: length, owner: owner)
        }
        let mover = RecordingMove(calls: calls, control: control)
        let source = try DirectoryHandle.open(files.directory)
        let data = try FileDescriptor.open(files.data, O_RDONLY)
        // Renamed, the recording is the file `data` is.
        let renamed = FileIdentity(try data.facts(), length: length)
        // On btrfs even a rename needs free space (its metadata reservation, see
        // `MetadataHeadroom`): on a full filesystem the spare gives its blocks for it. A copy's
        // ENOSPC is the destination's, which the spare cannot help.
        func move(to target: String) throws -> FileIdentity {
            var identity = renamed
            let step = {
                if case .copied(let copy) = try mover.move(data, named: "data", in: source, length: length, to: target,
                                                           in: directory, owner: owner, tag: journal.id,
                                                           renaming: sameFilesystem) {
                    identity = copy
                }
            }
            guard sameFilesystem, let spare = access.spare else {
                try step()
                return identity
            }
            try spare.retryingOnFullFilesystem(calls, step)
            return identity
        }
        var target = name
        do {
            do {
                return Outcome(path: directory.display(target), identity: try move(to: target), problem: nil)
            } catch let error as ProVideoError where error.code == .destinationExists && whenTaken == .recoveredSibling {
                target = FileSystem.lastComponent(of: Self.recoveredName(destination, id: journal.id))
                return Outcome(path: directory.display(target), identity: try move(to: target), problem: nil)
            }
        } catch let placed as RecordingMove.PlacedUnflushed {
            // The recording is at its destination: the journal records it there (it is never
            // looked for in the pool again), and the flush's failure is what `finish` reports.
            return Outcome(path: directory.display(target), identity: renamed, problem: placed.error)
        } catch let error as ProVideoError {
            var problem = error
            if error.code == .destinationExists {
                problem.message = "\(destination) appeared while recording; it was not overwritten"
            } else if error.code == .permissionDenied {
                problem.message = "its recorder \(owner.name) may not write in \(directoryPath) (\(error.message))"
            }
            return try keepInPool(files, journal, length: length, owner: owner, problem: problem)
        }
    }

    /// Makes the capture's `data` the recording as it will be moved: cut to `length`, flushed,
    /// owned by `owner` (never by a root process that salvages it) with the usual file mode
    /// (0666 less umask; the pool's files are 0660). One `held` in the pool is never group- or
    /// other-writable: its owner is whom `land` and `move` act as (`RecordingOwner`).
    private func sealRecording(_ files: CaptureFiles, length: Int64, owner: RecordingOwner, held: Bool) throws {
        let data = try FileDescriptor.open(files.data, O_RDWR)
        try data.truncate(length, calls)
        try data.sync(calls)
        // The recording belongs to the recorder, as a file it wrote would. Only root may give a
        // file away: a reserve another user of the pool's group created stays theirs, group
        // read/write (see Docs/POOL-LAYOUT.md, "Access").
        let facts = try data.facts()
        if ProcessIdentity.isRoot && facts.uid != owner.uid {
            try data.setOwner(owner.uid, facts.gid)
        }
        if ProcessIdentity.isRoot || facts.uid == ProcessIdentity.user {
            try data.setMode(0o666 & ~ProcessIdentity.umask & (held ? ~0o022 : ~0))
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

    /// The name a take of capture `id` is held under in `recordings/`: "<id>-<destination's
    /// name>", shortened so that every companion file (`HeldRecording.companions`, the longest
    /// "<held>.landing.tmp") still fits NAME_MAX.
    static func heldName(id: String, destination: String) -> String {
        let longestSuffix = HeldRecording.companions(of: "").map(\.utf8.count).max() ?? 0
        let room = DerivedName.maximumBytes - "\(id)-".utf8.count - longestSuffix
        return "\(id)-" + DerivedName.shortened(FileSystem.lastComponent(of: destination), toBytes: room)
    }

    /// Keeps the recording in `recordings/` with a note of where it was meant to go (`landing`:
    /// and that `provideo land` takes it there).
    func keepInPool(_ files: CaptureFiles, _ journal: CaptureJournal, length: Int64, owner: RecordingOwner,
                    problem: ProVideoError, landing: Bool = false) throws -> Outcome {
        try access.makeDirectory(layout.recordings)
        let kept = layout.recordings + "/" + Self.heldName(id: journal.id, destination: journal.destination)
        try sealRecording(files, length: length, owner: owner, held: true)
        let note = HeldRecording(path: kept, destination: journal.destination, length: length, reason: problem.message,
                                 movingTo: nil, landing: landing ? true : nil)
        try note.save(kept + ".json", calls, access: access)
        let identity = FileIdentity(try FileDescriptor.open(files.data, O_RDONLY).facts(), length: length)
        try FileSystem.rename(files.data, kept)
        try FileSystem.syncDirectory(layout.recordings, calls)
        var reported = problem
        reported.message += "; the recording (\(length) bytes) is kept in the pool at \(kept), to move once a "
            + "destination can take it"
        reported.path = kept
        reported.remedies = [.move]
        return Outcome(path: kept, identity: identity, problem: reported)
    }

    /// Keeps a finished recording in the pool, sealed and durable, to land in the background
    /// (`provideo land`, Landing/).
    func queueForLanding(_ files: CaptureFiles, _ journal: CaptureJournal, length: Int64,
                         owner: RecordingOwner) throws -> Outcome {
        let waiting = ProVideoError(.ioError, "waiting to land at \(journal.destination)", remedies: [.land])
        var placement = try keepInPool(files, journal, length: length, owner: owner, problem: waiting, landing: true)
        placement.problem = nil
        placement.landing = true
        return placement
    }
}

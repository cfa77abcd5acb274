import Glibc
import ProVideoSystem
import ProVideoJournal

/// One capture as recovery found it: the facts the decision takes, and what they were read
/// from (the journal, the errors behind each "unreadable", the place looked at).
struct CaptureObservation {
    let files: CaptureFiles
    let facts: CaptureFacts
    /// The journal, when it was read.
    let journal: CaptureJournal?
    /// Why each fact that could not be read could not, in the order observed.
    let problems: [ProVideoError]
    /// The path `facts.placed` was looked at.
    let placedPath: String?

    /// Observes `files` now: liveness first, so a live capture's other files are not read at
    /// all, then the journal, the commit record, `data`, and where the journal says or implies
    /// the recording went. Reads only; every failure is a fact, none a default.
    init(_ files: CaptureFiles, _ calls: SystemCalls) {
        self.files = files
        var problems: [ProVideoError] = []
        let liveness: CaptureFacts.Liveness
        switch CaptureClaim.liveness(files, calls) {
        case .alive: liveness = .alive
        case .dead: liveness = .dead
        case .unknown(let error):
            liveness = .unknown
            problems.append(error)
        }
        guard liveness == .dead else {
            (facts, journal, self.problems, placedPath) = (CaptureFacts(liveness: liveness, journal: .missing, commit: .missing,
                                                                        data: .missing, placed: .notLooked), nil, problems, nil)
            return
        }
        var journal: CaptureJournal?
        let journalFact: CaptureFacts.Journal
        do {
            let read = try CaptureJournal.load(files.journal)
            journal = read
            journalFact = read.discarded == true ? .discarded : read.placedAt != nil ? .placed
                : read.phase == .starting ? .starting : .recording
        } catch let error as ProVideoError where error.errno == ENOENT {
            journalFact = .missing
        } catch {
            journalFact = .unreadable
            problems.append(Self.typed(error, files.journal))
        }
        let commit: CaptureFacts.Commit
        switch CaptureJournal.readCommitRecord(files.commit, expected: journal?.commitIdentity) {
        case .length(let length): commit = .length(length)
        case .torn: commit = .torn
        case .missing: commit = .missing
        case .unreadable(let error):
            commit = .unreadable
            problems.append(error)
        }
        let data = Self.observeFile(files.data, &problems)
        var placedPath: String?
        var placed = CaptureFacts.Placed.notLooked
        if let journal, journalFact == .placed || (journalFact == .recording && data == .missing) {
            // Killed between the rename into place and the journal's update, the recording is
            // at its recovered sibling when that holds it, else at its destination: either
            // way the file `data` was.
            let places = journal.placedAt.map { [$0] }
                ?? [RecordingPlacement.recoveredName(journal.destination, id: journal.id), journal.destination]
            let take = journal.placedAt == nil ? journal.dataIdentity : journal.placedIdentity
            (placedPath, placed) = Self.observePlace(places, take: take, files: files, &problems)
        }
        self.facts = CaptureFacts(liveness: liveness, journal: journalFact, commit: commit, data: data, placed: placed)
        self.journal = journal
        self.problems = problems
        self.placedPath = placedPath
    }

    /// What `data` holds: its size, or where its written bytes end when that is sooner (a
    /// granted range never written is an unwritten extent, FIEMAP's `unwrittenTail`): a commit
    /// record that claims more than was written, forged or another's, then salvages no more
    /// than the recorder wrote. Not a regular file of one link is unreadable (`EvidenceFile`).
    private static func observeFile(_ path: String, _ problems: inout [ProVideoError]) -> CaptureFacts.Data {
        do {
            // Opened beneath the pool (a link or a directory there is refused), then judged by
            // what was opened.
            let data = try FileDescriptor.open(path, O_RDONLY | O_NONBLOCK)
            let facts = try data.facts()
            if let refusal = EvidenceFile.refusal(facts, expected: S_IFREG, path: path) {
                problems.append(refusal)
                return .unreadable
            }
            guard facts.size <= UInt64(Pool.maximumCapacity) else {
                problems.append(ProVideoError(.corruptState, "\(path) holds more than \(Pool.maximumCapacity) bytes, more "
                                              + "than a pool grants", path: path))
                return .unreadable
            }
            return .size(try data.unwrittenTail(from: 0, to: Int64(facts.size)))
        } catch let error as ProVideoError where error.errno == ENOENT {
            return .missing
        } catch {
            problems.append(typed(error, path))
            return .unreadable
        }
    }

    /// Whether one of `places` holds `take` (statx, a link not followed), and the place: the
    /// first that holds it; else the first where something else is (`unproven`), else the
    /// last (`absent`). Looked at as the capture's owner (the directory's), so that root
    /// learns nothing of a path its recorder could not see. A place that cannot be looked at
    /// stops the search: whether the take is there is unknown, and so is whether it is at the
    /// places after it. Without a recorded `take` nothing can be proven.
    private static func observePlace(_ places: [String], take: FileIdentity?, files: CaptureFiles,
                                     _ problems: inout [ProVideoError]) -> (String, CaptureFacts.Placed) {
        var path = places[0]
        var unproven: String?
        do {
            let directory = try FileSystem.facts(files.directory)
            let owner = RecordingOwner(uid: directory.uid, fallbackGroup: directory.gid)
            for place in places {
                path = place
                let found: FileFacts
                do {
                    found = try owner.acting { try FileSystem.factsWithoutFollowing(place) }
                } catch let error as ProVideoError where error.errno == ENOENT {
                    continue
                }
                guard let take, take.matches(found), found.size <= UInt64(Pool.maximumCapacity) else {
                    problems.append(ProVideoError(.corruptState, take == nil
                        ? "the journal recorded no identity of the take to compare \(place) with"
                        : "\(place) is not the take the journal recorded (another file, or not a regular file)", path: place))
                    unproven = unproven ?? place
                    continue
                }
                return (place, .holds(Int64(found.size)))
            }
            return unproven.map { ($0, .unproven) } ?? (path, .absent)
        } catch {
            problems.append(typed(error, path))
            return (path, .unknown)
        }
    }

    private static func typed(_ error: Error, _ path: String) -> ProVideoError {
        error as? ProVideoError ?? ProVideoError(.ioError, "\(path) cannot be read (\(error))", path: path)
    }
}

import CProVideo
import Glibc

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
        switch CaptureJournal.readCommitRecord(files.commit) {
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
            let path = journal.placedAt ?? Self.renamedPlace(journal)
            placedPath = path
            placed = Self.observePlace(path, files: files, &problems)
        }
        self.facts = CaptureFacts(liveness: liveness, journal: journalFact, commit: commit, data: data, placed: placed)
        self.journal = journal
        self.problems = problems
        self.placedPath = placedPath
    }

    /// Where a capture killed between its rename into place and its journal's update put the
    /// recording: its recovered sibling (named with its id, so it is this one) when that
    /// exists, else its destination.
    private static func renamedPlace(_ journal: CaptureJournal) -> String {
        let sibling = Pool.recoveredName(journal.destination, id: journal.id)
        return FileSystem.existsWithoutFollowing(sibling) ? sibling : journal.destination
    }

    /// A pool file's size; not a regular file is unreadable.
    private static func observeFile(_ path: String, _ problems: inout [ProVideoError]) -> CaptureFacts.Data {
        do {
            let facts = try FileSystem.facts(path)
            guard facts.mode & UInt32(S_IFMT) == UInt32(S_IFREG), facts.size <= UInt64(Pool.maximumCapacity) else {
                problems.append(ProVideoError(.corruptState, "\(path) is not a regular file of at most "
                                              + "\(Pool.maximumCapacity) bytes", path: path))
                return .unreadable
            }
            return .size(Int64(facts.size))
        } catch let error as ProVideoError where error.errno == ENOENT {
            return .missing
        } catch {
            problems.append(typed(error, path))
            return .unreadable
        }
    }

    /// What the place a recording went to holds, looked at as the capture's owner (the
    /// directory's), so that root learns nothing of a path its recorder could not see.
    private static func observePlace(_ path: String, files: CaptureFiles,
                                     _ problems: inout [ProVideoError]) -> CaptureFacts.Placed {
        do {
            let directory = try FileSystem.facts(files.directory)
            let owner = RecordingOwner(uid: directory.uid, fallbackGroup: directory.gid)
            var found: pv_file_facts?
            do {
                found = try owner.acting { try FileSystem.facts(path) }
            } catch let error as ProVideoError where error.errno == ENOENT {
                found = nil
            }
            guard let found else { return .absent }
            guard found.mode & UInt32(S_IFMT) == UInt32(S_IFREG), found.size <= UInt64(Pool.maximumCapacity) else {
                return .unknown
            }
            return .holds(Int64(found.size))
        } catch {
            problems.append(typed(error, path))
            return .unknown
        }
    }

    private static func typed(_ error: Error, _ path: String) -> ProVideoError {
        error as? ProVideoError ?? ProVideoError(.ioError, "\(path) cannot be read (\(error))", path: path)
    }
}

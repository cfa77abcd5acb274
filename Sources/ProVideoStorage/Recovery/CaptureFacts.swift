
/// What was observed of one capture in `captures/<id>/`, each fact possibly "unreadable" or
/// "unknown": the input of the one recovery decision (`RecoveryDecision.decide`). Values
/// only, so the decision can be tested over every combination (Docs/CAPTURE-LIFECYCLE.md,
/// "Recovery decides on proof").
struct CaptureFacts: Equatable, Sendable, CustomStringConvertible {
    /// Whether its recorder holds the `progress` lock.
    enum Liveness: Equatable, Sendable, CaseIterable { case alive, dead, unknown }

    /// What `capture.json` says, read and range-checked.
    enum Journal: Equatable, Sendable, CaseIterable {
        case missing
        /// It exists and cannot be read or decoded, or holds a value out of range.
        case unreadable
        /// `phase: starting`: the journal claims the capture accepted no frame yet.
        case starting
        /// `phase: recording`, neither placed nor discarded: `data` is the recording.
        case recording
        /// `placedAt` set: the journal claims the recording was placed (renamed, copied and
        /// verified, or held); `placed` says whether the place proves it.
        case placed
        /// `discarded` set: the journal claims its owner discarded it (a discard zeroes the
        /// commit records first, so a record that still proves bytes contradicts it).
        case discarded
    }

    /// What `commit` proves of the committed length (`CaptureJournal.CommitRecordState`).
    enum Commit: Hashable, Sendable {
        case missing
        case unreadable
        /// Readable, no valid record, not all zeros.
        case torn
        /// A valid record's length; 0: readable and never committed.
        case length(Int64)
    }

    /// What `data` is.
    enum Data: Hashable, Sendable {
        case missing
        /// It exists and its size cannot be read, or it is not a regular file of one link.
        case unreadable
        case size(Int64)
    }

    /// What the place the recording went to holds, looked at only where the journal says it
    /// was placed (`placedAt`) or where `data` is gone while recording (a kill after the rename
    /// into place and before the journal recorded it: its recovered sibling, else its
    /// destination). A path is no proof: the file the journal recorded as the take is
    /// (`CaptureJournal.placedIdentity`, `dataIdentity`).
    enum Placed: Hashable, Sendable {
        /// Not looked at: the journal neither names a placement nor lacks its `data`.
        case notLooked
        case absent
        /// The path exists and cannot be looked at.
        case unknown
        /// Something is there that is not proven to be the take: another file, a link, a
        /// directory, or any file where the journal recorded no identity to compare.
        case unproven
        /// The file the journal recorded as the take, of this many bytes.
        case holds(Int64)
    }

    var liveness: Liveness
    var journal: Journal
    var commit: Commit
    var data: Data
    var placed: Placed

    var description: String { "liveness \(liveness), journal \(journal), commit \(commit), data \(data), placed \(placed)" }
}

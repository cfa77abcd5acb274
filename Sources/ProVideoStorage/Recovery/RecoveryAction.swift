
/// What recovery does with one capture (`RecoveryDecision.decide`).
enum RecoveryAction: Equatable, Sendable {
    /// Its recorder is alive: not touched, not reported.
    case leave
    /// Nothing was committed, with proof (a readable, single-link commit record of 0, or no
    /// `data` left to hold a byte, and the journal in no later phase): its file goes back to
    /// the reserve. `reported`: listed in `Pool.discarded` (a recorder that wrote and committed
    /// nothing).
    case discard(reported: Bool)
    /// Neither a journal nor `data` is left: no byte of the take is in the pool (a capture
    /// killed while it was made, or while its files were removed, `progress` last). The empty
    /// remains are removed.
    case removeRemains
    /// Completed like `finish` from `length`, a length the commit record and `data` both
    /// prove. `claimed`: the commit record's larger claim, when `data` holds less.
    case salvage(length: Int64, claimed: Int64?)
    /// The take was placed (the place holds the file the journal recorded), discarded by its
    /// owner (its commit record proves nothing), or nothing of it is left in the pool: the
    /// removal of its files is finished. `placedLength`: what the place holds, reported as
    /// recovered; nil: nothing is reported placed.
    case completeRemoval(placedLength: Int64?)
    /// Uncertain: left as it is and reported, with why.
    case keep(KeepReason)

    /// Why a capture is kept as it is.
    enum KeepReason: Equatable, Sendable {
        /// Its recorder may be alive: its `progress` lock cannot be read.
        case livenessUnknown
        /// Its `data` cannot be read.
        case dataUnreadable
        /// Its journal is missing or unreadable and its commit record proves `committed` bytes:
        /// A salvage into a directory places them (`ProVideoError.Remedy.salvageWithoutJournal`).
        case noJournal(committed: Int64)
        /// Its journal is missing or unreadable and its commit record proves nothing.
        case nothingProven
        /// It was recording and its commit record cannot be read, is torn or is missing.
        case commitUnknown
        /// `data` is gone and the place it would have been renamed to does not hold its
        /// committed length.
        case dataMissing
        /// The journal says it was placed, `data` is still in the pool, and the place does not
        /// hold the file the journal recorded (nothing there, another file, no identity).
        case placementUnproven
        /// The journal says `starting` or discarded, and the commit record proves bytes or
        /// cannot be read: bytes outrank a journal's claim.
        case contradicted
    }
}

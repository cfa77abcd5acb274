
/// The one rule recovery follows, from what was observed of a capture to what is done with
/// it: every salvage (`recover`, `land`, `replenish`, `resize`, `destroy`, a capture's start,
/// any `Pool.open` that salvages, the mount) goes through it. Evidence ranks: bytes a
/// readable, single-link commit record proves outrank what a journal says, and a journal's
/// "placed" is believed only where the place holds the file it recorded. Two rules hold for
/// every input, and a test checks them over the whole product of facts: committed bytes that
/// may exist are never discarded, and nothing is reported placed unless the place holds it. The
/// table is in Docs/CAPTURE-LIFECYCLE.md.
enum RecoveryDecision {
    static func decide(_ facts: CaptureFacts) -> RecoveryAction {
        switch facts.liveness {
        case .alive: return .leave
        case .unknown: return .keep(.livenessUnknown)
        case .dead: break
        }
        if facts.data == .unreadable { return .keep(.dataUnreadable) }
        switch facts.journal {
        case .starting:
            // The journal turns `recording` before the first frame is accepted: a record that
            // proves a byte, or may, says the journal is wrong.
            return provesNothing(facts) ? .discard(reported: false) : .keep(.contradicted)
        case .placed:
            if case .holds(let length) = facts.placed { return .completeRemoval(placedLength: length) }
            // No byte of it is in the pool to keep: the place's contents are not ours to report.
            return facts.data == .missing ? .completeRemoval(placedLength: nil) : .keep(.placementUnproven)
        case .discarded:
            return provesNothing(facts) ? .completeRemoval(placedLength: nil) : .keep(.contradicted)
        case .recording:
            return decideRecording(facts)
        case .missing, .unreadable:
            if facts.journal == .missing && facts.data == .missing { return .removeRemains }
            switch facts.commit {
            case .length(0): return .discard(reported: false)
            case .length(let committed): return .keep(.noJournal(committed: committed))
            case .torn, .unreadable, .missing: return .keep(.nothingProven)
            }
        }
    }

    /// Whether no committed byte can be in the pool: the commit record proves none was, or no
    /// `data` is left to hold one.
    private static func provesNothing(_ facts: CaptureFacts) -> Bool {
        facts.commit == .length(0) || facts.data == .missing
    }

    private static func decideRecording(_ facts: CaptureFacts) -> RecoveryAction {
        guard case .length(let committed) = facts.commit else { return .keep(.commitUnknown) }
        if committed == 0 { return .discard(reported: true) }
        switch facts.data {
        case .size(let size):
            // A commit record never claims more than was written: keep what is there, say so.
            return size < committed ? .salvage(length: size, claimed: committed) : .salvage(length: committed, claimed: nil)
        case .missing:
            // Renamed into place before the journal said so: only if the place holds it all.
            return facts.placed == .holds(committed) ? .completeRemoval(placedLength: committed) : .keep(.dataMissing)
        case .unreadable:
            return .keep(.dataUnreadable)
        }
    }
}

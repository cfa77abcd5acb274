
/// The one rule recovery follows, from what was observed of a capture to what is done with
/// it: every salvage (`recover`, `land`, `replenish`, `resize`, `destroy`, a capture's start,
/// any `Pool.open` that salvages, the mount) goes through it. Two rules hold for every input,
/// and a test checks them over the whole product of facts: committed bytes that may exist are
/// never discarded, and nothing is reported placed unless the place holds it. The table is in
/// Docs/CAPTURE-LIFECYCLE.md.
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
            // The journal turns `recording` before the first frame is accepted.
            return .discard(reported: false)
        case .placed:
            return .completeRemoval(placedLength: placedLength(facts.placed))
        case .discarded:
            return .completeRemoval(placedLength: nil)
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

    private static func placedLength(_ placed: CaptureFacts.Placed) -> Int64? {
        if case .holds(let length) = placed { return length }
        return nil
    }
}

import Testing
@testable import ProVideoStorage

/// The one recovery rule (`RecoveryDecision.decide`), over the whole product of the facts it
/// takes, against the rules it must keep (Docs/CAPTURE-LIFECYCLE.md, "Recovery decides on
/// proof" and "Evidence ranks"), then row by row against the table the doc shows, the
/// contradictions of issue 63 among them.
@Suite struct RecoveryDecisionTests {
    static let commits: [CaptureFacts.Commit] = [.missing, .unreadable, .torn, .length(0), .length(4096), .length(1 << 40)]
    static let data: [CaptureFacts.Data] = [.missing, .unreadable, .size(0), .size(4096), .size(1 << 20), .size(1 << 41)]
    static let places: [CaptureFacts.Placed] = [.notLooked, .absent, .unknown, .unproven, .holds(0), .holds(4096),
                                                .holds(1 << 40)]

    /// Every combination of fact values.
    static var everyFact: [CaptureFacts] {
        CaptureFacts.Liveness.allCases.flatMap { liveness in
            CaptureFacts.Journal.allCases.flatMap { journal in
                commits.flatMap { commit in
                    data.flatMap { data in
                        places.map { CaptureFacts(liveness: liveness, journal: journal, commit: commit, data: data, placed: $0) }
                    }
                }
            }
        }
    }

    @Test func theProductIsWhole() {
        #expect(Self.everyFact.count == 3 * 6 * 6 * 6 * 7)
        #expect(Set(Self.everyFact.map(\.description)).count == Self.everyFact.count)
    }

    /// Rule 1: committed bytes that may exist in the pool are never discarded. A discard needs
    /// proof that nothing was committed; removing the remains needs no take in the pool; a
    /// salvage keeps a length both the commit record and `data` prove; a live or unknown owner
    /// is never acted on.
    @Test func committedBytesThatMayExistAreNeverDiscarded() {
        for facts in Self.everyFact {
            let action = RecoveryDecision.decide(facts)
            if facts.liveness != .dead {
                #expect(action == .leave || action == .keep(.livenessUnknown), "\(facts) → \(action)")
                #expect((action == .leave) == (facts.liveness == .alive), "\(facts) → \(action)")
                continue
            }
            switch action {
            case .discard:
                // A journal's `starting` is a claim, not proof: the commit record's 0 is, or no
                // `data` left to hold a byte.
                let proof = (facts.commit == .length(0) || (facts.journal == .starting && facts.data == .missing))
                    && facts.journal != .placed && facts.journal != .discarded
                #expect(proof, "discarded without proof: \(facts)")
                #expect(facts.data != .unreadable, "\(facts) → \(action)")
            case .removeRemains:
                #expect(facts.data == .missing && facts.journal == .missing, "\(facts) → \(action)")
            case .salvage(let length, let claimed):
                guard case .length(let committed) = facts.commit, case .size(let size) = facts.data else {
                    Issue.record("salvaged without a proven length: \(facts)")
                    continue
                }
                #expect(facts.journal == .recording, "\(facts) → \(action)")
                #expect(committed > 0 && length == min(committed, size), "\(facts) → \(action)")
                #expect(claimed == (size < committed ? committed : nil), "\(facts) → \(action)")
            case .completeRemoval:
                // The place holds the file the journal recorded, the owner's discard left a
                // commit record of 0, or `data` is gone: what the removal gives back is no
                // longer the only copy of a committed byte. A journal's word alone never is.
                let placed: Bool
                if case .holds = facts.placed { placed = true } else { placed = false }
                #expect(facts.data == .missing || placed || (facts.journal == .discarded && facts.commit == .length(0)),
                        "the removal gave back data on a journal's word: \(facts) → \(action)")
                #expect(facts.journal == .placed || facts.journal == .discarded
                        || (facts.journal == .recording && facts.data == .missing), "\(facts) → \(action)")
            case .keep, .leave:
                #expect(action != .leave, "a dead capture left unreported: \(facts)")
            }
        }
    }

    /// Rule 2: nothing is reported placed unless the place holds it.
    @Test func nothingIsReportedPlacedUnlessThePlaceHoldsIt() {
        for facts in Self.everyFact {
            guard case .completeRemoval(let placedLength?) = RecoveryDecision.decide(facts) else { continue }
            #expect(facts.placed == .holds(placedLength), "reported \(placedLength) bytes placed: \(facts)")
            if facts.journal == .recording, case .length(let committed) = facts.commit {
                #expect(placedLength == committed, "\(facts)")
            }
        }
    }

    /// Evidence ranks: wherever `data` holds bytes and the commit record proves some, or may
    /// (unreadable, torn, missing), no journal phase makes them go without the place holding
    /// the take: the action keeps or salvages them.
    @Test func bytesOutrankAJournalsClaim() {
        var outranked: [String] = []
        for facts in Self.everyFact where facts.liveness == .dead {
            guard case .size(let size) = facts.data, size > 0, facts.commit != .length(0) else { continue }
            if case .holds = facts.placed, facts.journal == .placed { continue }
            switch RecoveryDecision.decide(facts) {
            case .salvage, .keep: break
            case let action: outranked.append("\(facts) → \(action)")
            }
        }
        // A count, not the list: a mutation fails thousands of combinations, and the list as the
        // expectation's captured value took the run past ten minutes.
        let examples = outranked.prefix(5).joined(separator: "\n"), given = outranked.count
        #expect(given == 0, "combinations that gave bytes up on a journal's word, among them:\n\(examples)")
    }

    /// Every dead capture whose facts prove committed bytes and no placement is salvaged or
    /// kept, never silently dropped: the cases of issues 37 and 63 among them.
    @Test(arguments: [
        // A killed capture with an intact journal whose commit record cannot be read (mode 000,
        // a FIFO, a link, over 1 MiB): kept, not discarded.
        (CaptureFacts(liveness: .dead, journal: .recording, commit: .unreadable, data: .size(1 << 21), placed: .notLooked),
         RecoveryAction.keep(.commitUnknown)),
        // Both records garbled in one torn sector: kept.
        (CaptureFacts(liveness: .dead, journal: .recording, commit: .torn, data: .size(1 << 21), placed: .notLooked),
         .keep(.commitUnknown)),
        // An unreadable journal and a committed length: kept for `recover --salvage-to`.
        (CaptureFacts(liveness: .dead, journal: .unreadable, commit: .length(1_200_000), data: .size(1 << 21), placed: .notLooked),
         .keep(.noJournal(committed: 1_200_000))),
        // An unreadable journal and an unreadable commit record: kept.
        (CaptureFacts(liveness: .dead, journal: .unreadable, commit: .unreadable, data: .size(1 << 21), placed: .notLooked),
         .keep(.nothingProven)),
        // `data` removed, its destination empty: nothing is reported recovered.
        (CaptureFacts(liveness: .dead, journal: .recording, commit: .length(300_000), data: .missing, placed: .absent),
         .keep(.dataMissing)),
        // `data` renamed into place before the journal said so: the removal is finished.
        (CaptureFacts(liveness: .dead, journal: .recording, commit: .length(300_000), data: .missing, placed: .holds(300_000)),
         .completeRemoval(placedLength: 300_000)),
        // A place holding another length is not this take.
        (CaptureFacts(liveness: .dead, journal: .recording, commit: .length(300_000), data: .missing, placed: .holds(4096)),
         .keep(.dataMissing)),
        // Placed, the place emptied since by its user: finished, reported nowhere.
        (CaptureFacts(liveness: .dead, journal: .placed, commit: .length(300_000), data: .missing, placed: .absent),
         .completeRemoval(placedLength: nil)),
        (CaptureFacts(liveness: .dead, journal: .placed, commit: .missing, data: .missing, placed: .holds(300_000)),
         .completeRemoval(placedLength: 300_000)),
        // A finished take's files half removed (journal gone, progress last): the remains.
        (CaptureFacts(liveness: .dead, journal: .missing, commit: .length(300_000), data: .missing, placed: .notLooked),
         .removeRemains),
        // Killed before the journal was durable: the commit file is as `fallocate` left it.
        (CaptureFacts(liveness: .dead, journal: .missing, commit: .length(0), data: .size(0), placed: .notLooked),
         .discard(reported: false)),
        (CaptureFacts(liveness: .dead, journal: .starting, commit: .length(0), data: .size(1 << 24), placed: .notLooked),
         .discard(reported: false)),
        (CaptureFacts(liveness: .dead, journal: .recording, commit: .length(0), data: .size(1 << 24), placed: .notLooked),
         .discard(reported: true)),
        (CaptureFacts(liveness: .dead, journal: .recording, commit: .length(8192), data: .size(4096), placed: .notLooked),
         .salvage(length: 4096, claimed: 8192)),
        (CaptureFacts(liveness: .dead, journal: .recording, commit: .length(4096), data: .size(1 << 24), placed: .notLooked),
         .salvage(length: 4096, claimed: nil)),
        (CaptureFacts(liveness: .dead, journal: .recording, commit: .length(4096), data: .unreadable, placed: .notLooked),
         .keep(.dataUnreadable)),
        // Issue 63, F2: `placedAt` naming nothing, or a file that is not the take, beside the
        // take's only copy: kept.
        (CaptureFacts(liveness: .dead, journal: .placed, commit: .length(300_000), data: .size(1 << 22), placed: .absent),
         .keep(.placementUnproven)),
        (CaptureFacts(liveness: .dead, journal: .placed, commit: .length(300_000), data: .size(1 << 22), placed: .unproven),
         .keep(.placementUnproven)),
        // A copy placed, the pool's file half given back: the place holds the take.
        (CaptureFacts(liveness: .dead, journal: .placed, commit: .length(300_000), data: .size(1 << 20),
                      placed: .holds(300_000)), .completeRemoval(placedLength: 300_000)),
        // F3: `starting` beside a record that proves bytes, or may: kept.
        (CaptureFacts(liveness: .dead, journal: .starting, commit: .length(1 << 20), data: .size(1 << 22), placed: .notLooked),
         .keep(.contradicted)),
        (CaptureFacts(liveness: .dead, journal: .starting, commit: .unreadable, data: .size(1 << 22), placed: .notLooked),
         .keep(.contradicted)),
        (CaptureFacts(liveness: .dead, journal: .starting, commit: .torn, data: .missing, placed: .notLooked),
         .discard(reported: false)),
        // Discarded by a journal while the record still proves bytes: kept; with the record
        // revoked (a cancel zeroes it first): finished.
        (CaptureFacts(liveness: .dead, journal: .discarded, commit: .length(4096), data: .size(1 << 22), placed: .notLooked),
         .keep(.contradicted)),
        (CaptureFacts(liveness: .dead, journal: .discarded, commit: .length(0), data: .size(1 << 22), placed: .notLooked),
         .completeRemoval(placedLength: nil)),
        // A file at the destination that is not the renamed `data`: not the take.
        (CaptureFacts(liveness: .dead, journal: .recording, commit: .length(300_000), data: .missing, placed: .unproven),
         .keep(.dataMissing)),
        (CaptureFacts(liveness: .unknown, journal: .missing, commit: .missing, data: .missing, placed: .notLooked),
         .keep(.livenessUnknown)),
        (CaptureFacts(liveness: .alive, journal: .missing, commit: .missing, data: .missing, placed: .notLooked), .leave),
    ])
    func theTableRows(_ facts: CaptureFacts, _ expected: RecoveryAction) {
        #expect(RecoveryDecision.decide(facts) == expected, "\(facts)")
    }
}

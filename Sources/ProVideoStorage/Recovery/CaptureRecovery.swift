import FoundationEssentials
import Glibc
import ProVideoSystem
import ProVideoJournal

/// Salvaging the captures of recorders that died: each observed (`CaptureObservation`), then
/// acted on as the one decision says (`RecoveryDecision`), as its recorder's user, alone
/// (Docs/CAPTURE-LIFECYCLE.md). A value handed what it needs of the pool (`Pool.recovery`);
/// what it found is its `report`, which the pool keeps.
struct CaptureRecovery {
    let layout: PoolLayout
    let access: PoolAccess
    let lock: PoolLock
    let calls: SystemCalls
    let completion: CaptureCompletion
    let log: RecoveredLog

    /// What a recovery did beside the recordings it salvaged.
    struct Report {
        /// Captures discarded because nothing of them was committed.
        var discarded: [DiscardedCapture] = []
        /// Captures left as they are, each with why (`RecoveryAction.KeepReason`), once per path.
        var kept: [ProVideoError] = []

        mutating func keep(_ error: ProVideoError) {
            if !kept.contains(where: { $0.path == error.path }) { kept.append(error) }
        }
    }

    /// Salvages every capture whose owner died, each alone, leaving running captures untouched
    /// and uncertain ones kept and reported (`report.kept`). Call with the mutation lock held.
    /// `control` gets the progress of a take's copy to another filesystem.
    /// - Returns: the recordings salvaged.
    func salvageDeadCaptures(control: OperationControl, _ report: inout Report) throws -> [SalvagedRecording] {
        try adoptLegacyCapture()
        var recordings: [SalvagedRecording] = []
        for files in try layout.captureFiles() {
            do {
                if let recording = try recover(CaptureObservation(files, calls), control: control, &report) {
                    recordings.append(recording)
                }
            } catch let error as ProVideoError where error.code == .corruptState || error.code == .permissionDenied
                        || error.errno == EACCES || error.errno == EPERM {
                // A planted link or file, or another user's capture this process may not
                // change (a member meets root's): refused, reported, and no reason to leave
                // the others.
                report.keep(error)
            }
        }
        return recordings
    }

    /// A pool of format 1 kept its one capture in `capture/`, with the whole reserve as its
    /// file: it becomes `captures/<id>/`, a capture granted everything, salvaged as any other.
    private func adoptLegacyCapture() throws {
        guard try FileSystem.isPresent(layout.legacyCapture), !(try lock.heldByOthers().contains(.capturing)) else { return }
        let id: String
        do {
            id = try CaptureJournal.load(layout.legacyCapture + "/capture.json").id
        } catch let error as ProVideoError where error.errno == ENOENT {
            id = "legacy"
        }
        try access.makeDirectory(layout.captures)
        try FileSystem.rename(layout.legacyCapture, layout.capture(id).directory)
        try FileSystem.syncDirectory(layout.directory, calls)
    }

    /// Does what the decision says for one observed capture.
    /// - Returns: the recording salvaged, or found placed, if any.
    func recover(_ observed: CaptureObservation, control: OperationControl, _ report: inout Report) throws -> SalvagedRecording? {
        let files = observed.files
        switch RecoveryDecision.decide(observed.facts) {
        case .leave:
            return nil
        case .keep(let reason):
            report.keep(kept(observed, reason))
            return nil
        case .removeRemains:
            CaptureCompletion.removeFiles(of: files)
            return nil
        case .discard(let reported):
            // A figure for the report only: unreadable, it is reported unknown.
            let written: Int64?
            do { written = try CaptureJournal.readWritten(files.progress) } catch { written = nil }
            try completion.discard(files, journal: observed.journal)
            if reported, let journal = observed.journal {
                report.discarded.append(DiscardedCapture(destination: journal.destination, bytesWritten: written))
            }
            return nil
        case .salvage(let length, let claimed):
            let journal = try required(observed)
            let note = claimed.map { "its commit record claims \($0) bytes but \(files.data) holds \(length); \(length) were kept" }
            // Placed at its destination, at a recovered sibling, or kept in `recordings/`: the
            // placement says where, and a take kept in the pool is salvaged all the same.
            let placement = try completion.complete(files, journal: journal, length: length, whenTaken: .recoveredSibling,
                                                control: control)
            return try logged(SalvagedRecording(path: placement.path, length: length,
                                                salvagedAt: Date().timeIntervalSince1970, note: note))
        case .completeRemoval(let placedLength):
            let journal = try required(observed)
            let placement = try completion.complete(files, journal: journal, length: placedLength ?? 0, control: control)
            guard let placedLength else { return nil }
            return try logged(SalvagedRecording(path: observed.placedPath ?? placement.path, length: placedLength,
                                                salvagedAt: Date().timeIntervalSince1970))
        }
    }

    /// The journal an action that needs one was decided from.
    private func required(_ observed: CaptureObservation) throws -> CaptureJournal {
        guard let journal = observed.journal else {
            throw ProVideoError(.invariantViolated, "capture \(observed.files.id) was decided on without its journal",
                                path: observed.files.journal)
        }
        return journal
    }

    /// Why a capture is kept as it is, with what could not be read.
    private func kept(_ observed: CaptureObservation, _ reason: RecoveryAction.KeepReason) -> ProVideoError {
        let files = observed.files
        let cause = observed.problems.map(\.message).joined(separator: "; ")
        let because = cause.isEmpty ? "" : " (\(cause))"
        let message: String
        switch reason {
        case .livenessUnknown:
            message = "capture \(files.id) is left as it is: whether its recorder is alive cannot be read\(because)"
        case .dataUnreadable:
            message = "capture \(files.id) is left as it is: its data \(files.data) cannot be read\(because)"
        case .noJournal(let committed):
            message = "the journal of capture \(files.id) is \(observed.facts.journal == .missing ? "missing" : "unreadable")"
                + "\(because): its \(committed) committed bytes are kept at \(files.data), to be salvaged into a "
                + "directory of your choice"
        case .nothingProven:
            message = "capture \(files.id) is left as it is: neither its journal nor its commit record can be read\(because); "
                + "what it committed is unknown, so nothing of it is discarded"
        case .commitUnknown:
            message = "capture \(files.id) is left as it is: its commit record \(files.commit) is "
                + "\(Self.describe(observed.facts.commit))\(because), so what it committed is unknown and nothing is discarded"
        case .dataMissing:
            message = "capture \(files.id) is left as it is: its data \(files.data) is gone and "
                + "\(observed.placedPath ?? "its destination") does not hold its committed bytes\(because); nothing was recovered"
        case .placementUnproven:
            message = "capture \(files.id) is left as it is: its journal says it was placed at "
                + "\(observed.journal?.placedAt ?? "?"), but that place does not hold the take\(because); its data "
                + "\(files.data) is kept, and nothing was reported recovered"
        case .contradicted:
            let said = observed.facts.journal == .starting ? "it was starting" : "it was discarded"
            message = "capture \(files.id) is left as it is: its journal says \(said), but its commit record "
                + "\(files.commit) is \(Self.describe(observed.facts.commit))\(because); bytes outrank a journal's claim, "
                + "so its data \(files.data) is kept"
        }
        let path = reason == .dataUnreadable || reason == .placementUnproven ? files.data
            : reason == .commitUnknown || reason == .contradicted ? files.commit
            : reason == .livenessUnknown ? files.progress : files.journal
        // A capture whose recorder may be alive is busy, not broken: `recover` says so and goes on.
        var remedies: [ProVideoError.Remedy] = []
        if case .noJournal = reason { remedies = [.salvageWithoutJournal] }
        return ProVideoError(reason == .livenessUnknown ? .busy : .corruptState, message, path: path, remedies: remedies)
    }

    private static func describe(_ commit: CaptureFacts.Commit) -> String {
        switch commit {
        case .missing: "missing"
        case .unreadable: "unreadable"
        case .torn: "torn (no record's check word matches, or the file is cut short)"
        case .length(let length): "\(length) bytes"
        }
    }

    private func logged(_ recording: SalvagedRecording) throws -> SalvagedRecording {
        try log.append(recording)
        return recording
    }
}

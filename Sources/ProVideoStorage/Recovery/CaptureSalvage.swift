import Foundation
import Glibc
import ProVideoSystem
import ProVideoJournal

/// Salvaging the captures of recorders that died: each observed (`CaptureObservation`), then
/// acted on as the one decision says (`RecoveryDecision`), as its recorder's user, alone
/// (Docs/CAPTURE-LIFECYCLE.md).
extension Pool {
    /// Salvages every capture whose owner died, each alone, leaving running captures untouched
    /// and uncertain ones kept and reported (`unsalvageable`). Call with the mutation lock
    /// held. `control` gets the progress of a take's copy to another filesystem.
    /// - Returns: the recordings salvaged.
    @discardableResult
    func salvageDeadCaptures(control: OperationControl) throws -> [SalvagedRecording] {
        try adoptLegacyCapture()
        var recordings: [SalvagedRecording] = []
        for files in try captureFiles() {
            do {
                if let recording = try recover(CaptureObservation(files, calls), control: control) { recordings.append(recording) }
            } catch let error as ProVideoError where error.code == .corruptState || error.code == .permissionDenied {
                // A planted link or file, or another user's capture this process may not
                // change: refused, reported, and no reason to leave the others.
                report(error)
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
        try FileSystem.syncDirectory(path, calls)
    }

    /// Does what the decision says for one observed capture.
    /// - Returns: the recording salvaged, or found placed, if any.
    private func recover(_ observed: CaptureObservation, control: OperationControl) throws -> SalvagedRecording? {
        let files = observed.files
        switch RecoveryDecision.decide(observed.facts) {
        case .leave:
            return nil
        case .keep(let reason):
            report(kept(observed, reason))
            return nil
        case .removeRemains:
            removeFiles(of: files)
            return nil
        case .discard(let reported):
            // A figure for the report only: unreadable, it is reported unknown.
            let written: Int64?
            do { written = try CaptureJournal.readWritten(files.progress) } catch { written = nil }
            try discardCapture(files, journal: observed.journal)
            if reported, let journal = observed.journal {
                discarded.append(DiscardedCapture(destination: journal.destination, bytesWritten: written))
            }
            return nil
        case .salvage(let length, let claimed):
            let journal = try required(observed)
            let note = claimed.map { "its commit record claims \($0) bytes but \(files.data) holds \(length); \(length) were kept" }
            // Placed at its destination, at a recovered sibling, or kept in `recordings/`: the
            // placement says where, and a take kept in the pool is salvaged all the same.
            let placement = try completeCapture(files, journal: journal, length: length, whenTaken: .recoveredSibling,
                                                control: control)
            return try logged(SalvagedRecording(path: placement.path, length: length,
                                                salvagedAt: Date().timeIntervalSince1970, note: note))
        case .completeRemoval(let placedLength):
            let journal = try required(observed)
            let placement = try completeCapture(files, journal: journal, length: placedLength ?? 0, control: control)
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
                + "\(because): its \(committed) committed bytes are kept at \(files.data); `provideo recover "
                + "--salvage-to DIR` places them in DIR"
        case .nothingProven:
            message = "capture \(files.id) is left as it is: neither its journal nor its commit record can be read\(because); "
                + "what it committed is unknown, so nothing of it is discarded"
        case .commitUnknown:
            message = "capture \(files.id) is left as it is: its commit record \(files.commit) is "
                + "\(Self.describe(observed.facts.commit))\(because), so what it committed is unknown and nothing is discarded"
        case .dataMissing:
            message = "capture \(files.id) is left as it is: its data \(files.data) is gone and "
                + "\(observed.placedPath ?? "its destination") does not hold its committed bytes; nothing was recovered"
        }
        let path = reason == .dataUnreadable ? files.data : reason == .commitUnknown ? files.commit
            : reason == .livenessUnknown ? files.progress : files.journal
        // A capture whose recorder may be alive is busy, not broken: `recover` says so and goes on.
        return ProVideoError(reason == .livenessUnknown ? .busy : .corruptState, message, path: path)
    }

    private static func describe(_ commit: CaptureFacts.Commit) -> String {
        switch commit {
        case .missing: "missing"
        case .unreadable: "unreadable"
        case .torn: "torn (no record's check word matches, or the file is cut short)"
        case .length(let length): "\(length) bytes"
        }
    }

    /// Records a capture left as it is, once per path.
    private func report(_ error: ProVideoError) {
        if !unsalvageable.contains(where: { $0.path == error.path }) { unsalvageable.append(error) }
    }

    /// Salvages the dead captures whose journal is missing or unreadable but whose commit
    /// record proves committed bytes, each to `directory`/`<id>.salvaged` (a journal is
    /// written for it first), as their owner.
    /// - Returns: the recordings salvaged.
    /// - Throws: `.invalidDestination` when `directory` cannot take them; what a salvage throws.
    package func salvageWithoutJournal(into directory: String) throws -> [SalvagedRecording] {
        try lock.withMutation {
            var recordings: [SalvagedRecording] = []
            for files in try captureFiles() {
                guard case .keep(.noJournal) = RecoveryDecision.decide(CaptureObservation(files, calls).facts) else { continue }
                let destination = try resolveDestination(directory + "/\(files.id).salvaged")
                let journal = CaptureJournal(id: files.id, destination: destination, alignment: directIOAlignment.io,
                                             bitrate: 0, engine: "", phase: .recording,
                                             startedAt: Date().timeIntervalSince1970, pid: 0)
                try FileSystem.remove(files.journal)
                try journal.save(files.journal, calls, access: access)
                if let recording = try recover(CaptureObservation(files, calls), control: .none) { recordings.append(recording) }
            }
            salvaged += recordings
            return recordings
        }
    }

    /// The captures whose recorder died, not yet salvaged (`provideo recover` salvages them),
    /// by id.
    /// - Throws: `.ioError` when `captures/` cannot be listed.
    package func deadCaptures() throws -> [String] {
        try captureFiles().filter { CaptureClaim.liveness($0, calls) == .dead }.map(\.id)
    }

    private func logged(_ recording: SalvagedRecording) throws -> SalvagedRecording {
        try logSalvage(recording)
        return recording
    }
}

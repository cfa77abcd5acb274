import FoundationEssentials
import ProVideoSystem
import ProVideoJournal

/// The pool's recovery, wired: completion and salvage are values (`CaptureCompletion`,
/// `CaptureRecovery`) handed what they need; what a salvage found is kept in the pool's state
/// (`salvaged`, `discarded`, `unsalvageable`) for whoever opened it.
extension Pool {
    var completion: CaptureCompletion {
        let reserveFile = reserve(layout.reserve)
        return CaptureCompletion(layout: layout, access: access, lock: lock, calls: calls, reserve: reserveFile,
                                 account: { try self.capacityAccount(reserveFile) })
    }

    var recovery: CaptureRecovery {
        CaptureRecovery(layout: layout, access: access, lock: lock, calls: calls, completion: completion, log: recoveredLog)
    }

    /// Salvages every capture whose owner died (`CaptureRecovery.salvageDeadCaptures`), keeping
    /// what it discarded and left in `discarded` and `unsalvageable`. Call with the mutation
    /// lock held.
    /// - Returns: the recordings salvaged.
    @discardableResult
    func salvageDeadCaptures(control: OperationControl) throws -> [SalvagedRecording] {
        // A grant by exchange killed before its cut left the reserve a hole for a tail, whose
        // blocks a dead capture's file holds: cut first, the account is exact again, and the
        // salvage gives those blocks back by exchange. Nowhere else: the size lock waits for
        // the cuts in flight, which a start must not (a `discard` mount's take seconds).
        if exchange.isOn { try lock.withReserveSize { try reserve(layout.reserve).cutUnmappedTail() } }
        var report = CaptureRecovery.Report()
        defer { keep(report) }
        return try recovery.salvageDeadCaptures(control: control, &report)
    }

    /// Salvages the dead captures whose journal is missing or unreadable but whose commit
    /// record proves committed bytes, each to `directory`/`<id>.salvaged` (a journal is
    /// written for it first), as their owner.
    /// - Returns: the recordings salvaged.
    /// - Throws: `.invalidDestination` when `directory` cannot take them; what a salvage throws.
    package func salvageWithoutJournal(into directory: String) throws -> [SalvagedRecording] {
        try lock.withMutation {
            let recovery = recovery
            var recordings: [SalvagedRecording] = [], report = CaptureRecovery.Report()
            defer { keep(report) }
            for files in try layout.captureFiles() {
                guard case .keep(.noJournal) = RecoveryDecision.decide(CaptureObservation(files, calls).facts) else { continue }
                let destination = try CaptureDestination(poolDirectory: path).resolve(directory + "/\(files.id).salvaged")
                let journal = CaptureJournal(id: files.id, destination: destination, alignment: directIOAlignment.io,
                                             bitrate: 0, engine: "", phase: .recording,
                                             startedAt: Date().timeIntervalSince1970, pid: 0)
                try FileSystem.remove(files.journal)
                try journal.save(files.journal, calls, access: access)
                if let recording = try recovery.recover(CaptureObservation(files, calls), control: .none, &report) {
                    recordings.append(recording)
                }
            }
            salvaged += recordings
            return recordings
        }
    }

    /// The captures whose recorder died, not yet salvaged (`provideo recover` salvages them),
    /// by id.
    /// - Throws: `.ioError` when `captures/` cannot be listed.
    package func deadCaptures() throws -> [String] {
        try layout.captureFiles().filter { CaptureClaim.liveness($0, calls) == .dead }.map(\.id)
    }


    private func keep(_ report: CaptureRecovery.Report) {
        discarded += report.discarded
        for error in report.kept where !unsalvageable.contains(where: { $0.path == error.path }) { unsalvageable.append(error) }
    }
}

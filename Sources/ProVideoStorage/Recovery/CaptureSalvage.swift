import Foundation
import Glibc

/// Salvaging the captures of recorders that died: each from its last committed length, as its
/// recorder's user, alone (Docs/CAPTURE-LIFECYCLE.md).
extension Pool {
    /// Salvages every capture whose owner died, each alone, leaving running captures untouched.
    /// Call with the mutation lock held. `control` gets the progress of a take's copy to another
    /// filesystem.
    /// - Returns: the recordings salvaged.
    @discardableResult
    func salvageDeadCaptures(control: OperationControl) throws -> [SalvagedRecording] {
        try adoptLegacyCapture()
        var recordings: [SalvagedRecording] = []
        for files in try captureFiles() where !CaptureClaim.isAlive(files) {
            do {
                if let recording = try salvage(files, control: control) { recordings.append(recording) }
            } catch let error as ProVideoError where error.code == .corruptState || error.code == .permissionDenied {
                // A planted link or file, or another user's capture this process may not
                // change: refused, reported, and no reason to leave the others.
                if !unsalvageable.contains(where: { $0.path == error.path }) { unsalvageable.append(error) }
            }
        }
        return recordings
    }

    /// A pool of format 1 kept its one capture in `capture/`, with the whole reserve as its
    /// file: it becomes `captures/<id>/`, a capture granted everything, salvaged as any other.
    private func adoptLegacyCapture() throws {
        guard FileSystem.exists(layout.legacyCapture), !(try lock.heldByOthers().contains(.capturing)) else { return }
        let id = (try? CaptureJournal.load(layout.legacyCapture + "/capture.json"))?.id ?? "legacy"
        try access.makeDirectory(layout.captures)
        try FileSystem.rename(layout.legacyCapture, layout.capture(id).directory)
        try FileSystem.syncDirectory(path, calls)
    }

    /// Salvages one capture whose owner died: cuts it to its last committed length, flushes it,
    /// moves it to its destination (to a sibling name when the destination now exists) and
    /// returns the unused space to the reserve.
    private func salvage(_ files: CaptureFiles, control: OperationControl) throws -> SalvagedRecording? {
        let journal: CaptureJournal
        do {
            journal = try CaptureJournal.load(files.journal)
        } catch {
            // Without its journal a capture may be discarded only when nothing of it was
            // committed (killed before the journal was durable); committed bytes are kept.
            let committed = CaptureJournal.readCommitted(files.commit)
            guard committed > 0 else {
                try discardCapture(files)
                return nil
            }
            let reason = (error as? ProVideoError)?.message ?? "\(error)"
            throw ProVideoError(.corruptState, "the journal of capture \(files.id) is unreadable (\(reason)): its "
                                + "\(committed) committed bytes are kept at \(files.data); `provideo recover "
                                + "--salvage-to DIR` places them in DIR", path: files.journal)
        }
        if journal.phase == .starting {
            // Killed before it recorded anything.
            try discardCapture(files)
            return nil
        }
        var committed = CaptureJournal.readCommitted(files.commit)
        var note: String?
        if journal.placedAt == nil, let size = try? FileSystem.facts(files.data).size, UInt64(committed) > size {
            // A commit record never claims more than was written: keep what is there, say so.
            note = "its commit record claims \(committed) bytes but \(files.data) holds \(size); \(size) were kept"
            committed = Int64(size)
        }
        if journal.placedAt == nil && journal.discarded == nil && committed == 0 {
            // Nothing reached the disk durably: leave no empty file at the destination, and say so.
            let written = CaptureJournal.readCounter(files.progress)
            try discardCapture(files)
            discarded.append(DiscardedCapture(destination: journal.destination, bytesWritten: written))
            return nil
        }
        // Placed at its destination, at a recovered sibling, or kept in `recordings/`: the
        // placement says where, and a take kept in the pool is salvaged all the same.
        let placement = try completeCapture(files, journal: journal, length: committed, whenTaken: .recoveredSibling,
                                            control: control)
        return try logged(SalvagedRecording(path: placement.path, length: committed,
                                            salvagedAt: Date().timeIntervalSince1970, note: note))
    }

    /// Salvages the dead captures whose journal is unreadable but that committed bytes, each to
    /// `directory`/`<id>.salvaged` (a journal is written for it first), as their owner.
    /// - Returns: the recordings salvaged.
    /// - Throws: `.invalidDestination` when `directory` cannot take them; what a salvage throws.
    package func salvageWithoutJournal(into directory: String) throws -> [SalvagedRecording] {
        try lock.withMutation {
            var recordings: [SalvagedRecording] = []
            for files in try captureFiles() where !CaptureClaim.isAlive(files) && (try? CaptureJournal.load(files.journal)) == nil
                && CaptureJournal.readCommitted(files.commit) > 0 {
                let destination = try resolveDestination(directory + "/\(files.id).salvaged")
                let journal = CaptureJournal(id: files.id, destination: destination, alignment: directIOAlignment.io,
                                             bitrate: 0, engine: "", phase: .recording,
                                             startedAt: Date().timeIntervalSince1970, pid: 0)
                try FileSystem.remove(files.journal)
                try journal.save(files.journal, calls, access: access)
                if let recording = try salvage(files, control: .none) { recordings.append(recording) }
            }
            salvaged += recordings
            return recordings
        }
    }

    /// The captures whose recorder died, not yet salvaged (`provideo recover` salvages them),
    /// by id.
    /// - Throws: `.ioError` when `captures/` cannot be listed.
    package func deadCaptures() throws -> [String] {
        try captureFiles().filter { !CaptureClaim.isAlive($0) }.map(\.id)
    }

    private func logged(_ recording: SalvagedRecording) throws -> SalvagedRecording {
        try logSalvage(recording)
        return recording
    }
}

import FoundationEssentials
import Glibc
import ProVideoSystem

/// What a capture keeps in its journal, `captures/<id>/capture.json` (see `CaptureFiles`), so
/// that any process can see it and a crash can be salvaged. Written durably before the capture
/// is granted any space, again once its engine runs, and again as it completes.

/// A capture's phase, as its journal records it.
package enum CapturePhase: String, Codable, Sendable {
    /// The journal is durable; the first grant may not have been made yet.
    case starting
    /// `data` is the recording, written by a live recorder (or a dead one).
    case recording
    /// The capture is being placed or discarded (`placedAt`, `discarded`); what its file holds
    /// beyond the recording goes back to the reserve.
    case completing
}

package struct CaptureJournal: Codable, Sendable, Equatable {
    /// The largest length a capture's records may hold, in bytes: 8 EiB less 1 GiB, the
    /// largest pool (`Pool.maximumCapacity`, `Reserve.maximumSize` are this figure). A length
    /// read from a commit record or a progress block past it is no capture's.
    package static let maximumLength: Int64 = Int64.max / (1 << 30) * (1 << 30)

    package var id: String
    /// Absolute path the recording moves to on finish.
    package var destination: String
    /// Alignment of every write, in bytes.
    package var alignment: Int
    /// Expected bitrate in bits per second, used for "time remaining".
    package var bitrate: Int64
    /// The engine writing the capture ("io_uring", "io_uring (unregistered buffers)", "pwrite").
    package var engine: String
    /// Where the capture is in its life, so that a salvage knows what a killed process left.
    package var phase: CapturePhase
    /// Seconds since 1970.
    package var startedAt: Double
    package var pid: Int32
    /// Set when the capture was started over the pool's admissible bandwidth
    /// (`CaptureOptions.admitOverBandwidth`).
    package var admittedOverBandwidth: Bool?
    /// Finishing keeps the recording in the pool to land in the background (`provideo land`)
    /// when its destination is on another filesystem.
    package var landInBackground: Bool?
    /// Where the recording was placed; once set, what `data` still holds (a copied recording's
    /// file) goes back to the reserve.
    package var placedAt: String?
    /// Set when the capture is discarded: all of `data` goes back to the reserve.
    package var discarded: Bool?
    /// Which file `data` is, recorded when the capture's files are made: a take renamed into
    /// place before the journal said so is found by it, never by a path and a length.
    package var dataIdentity: FileIdentity?
    /// Which file `commit` is, recorded when the capture's files are made: a record moved
    /// whole from another capture (a hard link, then the other name removed) is valid and has
    /// one link, and only this tells it is not this capture's.
    package var commitIdentity: FileIdentity?
    /// Which file at `placedAt` is the take, recorded with `placedAt`: "placed" is proven only
    /// by the place holding that file (nil, in a journal of an earlier version: unproven).
    package var placedIdentity: FileIdentity?
    /// Bytes of the unused grant freed on the filesystem when the recording was placed, given
    /// to the reserve once the journal is gone (`CaptureCompletion.completionRoom`).
    package var owed: Int64?

    /// A new capture's journal: the optional fields unset.
    package init(id: String, destination: String, alignment: Int, bitrate: Int64, engine: String, phase: CapturePhase,
                 startedAt: Double, pid: Int32) {
        (self.id, self.destination, self.alignment, self.bitrate) = (id, destination, alignment, bitrate)
        (self.engine, self.phase, self.startedAt, self.pid) = (engine, phase, startedAt, pid)
    }

    package static func load(_ path: String) throws -> CaptureJournal {
        let bytes = try FileSystem.readSmallFile(path)
        let journal: CaptureJournal
        do {
            journal = try JSONDecoder().decode(CaptureJournal.self, from: Data(bytes))
        } catch {
            throw ProVideoError(.corruptState, "the capture journal \(path) is unreadable (\(error))", path: path)
        }
        // A relative destination would be resolved against whatever directory the salvager runs in.
        guard journal.destination.hasPrefix("/") else {
            throw ProVideoError(.corruptState, "the capture journal \(path) is corrupt: its destination "
                                + "'\(journal.destination)' is not an absolute path", path: path)
        }
        // Its numbers are range-checked once, here (Docs/SECURITY.md rule 7): a negative bitrate
        // would lower the admission sum and show as a negative rate, an alignment that is no
        // power of two would misalign every write of a salvage, a time that is no time would
        // trap where it is turned into an integer.
        func corrupt(_ field: String, _ value: String, _ rule: String) -> ProVideoError {
            ProVideoError(.corruptState, "the capture journal \(path) is corrupt: its \(field) \(value) is not \(rule)",
                          path: path)
        }
        guard journal.bitrate >= 0 else {
            throw corrupt("bitrate", "\(journal.bitrate)", "a bitrate (0 or more bit/s)")
        }
        guard journal.alignment > 0, journal.alignment <= 1 << 20, journal.alignment & (journal.alignment - 1) == 0 else {
            throw corrupt("alignment", "\(journal.alignment)", "an alignment (a power of two, at most 1 MiB)")
        }
        guard journal.startedAt.isFinite, abs(journal.startedAt) <= 1e11 else {
            throw corrupt("startedAt", "\(journal.startedAt)", "a time (seconds since 1970, at most 1e11 either way)")
        }
        for (field, identity) in [("dataIdentity", journal.dataIdentity), ("commitIdentity", journal.commitIdentity),
                                  ("placedIdentity", journal.placedIdentity)] {
            guard let identity, !identity.isInRange else { continue }
            throw corrupt(field, "\(identity)", "a file's identity (a length of 0 to \(maximumLength) bytes, a SHA-256 "
                          + "of 64 lowercase hex digits)")
        }
        return journal
    }

}

import Foundation
import Glibc
import ProVideoSystem

/// What a capture keeps in its journal, `captures/<id>/capture.json` (see `CaptureFiles`), so
/// that any process can see it and a crash can be salvaged. Written durably before the capture
/// is granted any space, again once its engine runs, and again as it completes.

/// A capture's phase, as its journal records it.
enum CapturePhase: String, Codable, Sendable {
    /// The journal is durable; the first grant may not have been made yet.
    case starting
    /// `data` is the recording, written by a live recorder (or a dead one).
    case recording
    /// The capture is being placed or discarded (`placedAt`, `discarded`); what its file holds
    /// beyond the recording goes back to the reserve.
    case completing
}

package struct CaptureJournal: Codable, Sendable, Equatable {
    var id: String
    /// Absolute path the recording moves to on finish.
    var destination: String
    /// Alignment of every write, in bytes.
    var alignment: Int
    /// Expected bitrate in bits per second, used for "time remaining".
    var bitrate: Int64
    /// The engine writing the capture ("io_uring", "io_uring (unregistered buffers)", "pwrite").
    var engine: String
    /// Where the capture is in its life, so that a salvage knows what a killed process left.
    var phase: CapturePhase
    /// Seconds since 1970.
    var startedAt: Double
    var pid: Int32
    /// Set when the capture was started over the pool's admissible bandwidth
    /// (`CaptureOptions.admitOverBandwidth`).
    var admittedOverBandwidth: Bool?
    /// Finishing keeps the recording in the pool to land in the background (`provideo land`)
    /// when its destination is on another filesystem.
    var landInBackground: Bool?
    /// Where the recording was placed; once set, what `data` still holds (a copied recording's
    /// file) goes back to the reserve.
    var placedAt: String?
    /// Set when the capture is discarded: all of `data` goes back to the reserve.
    var discarded: Bool?
    /// Bytes of the unused grant freed on the filesystem when the recording was placed, given
    /// to the reserve once the journal is gone (`Pool.completionRoom`).
    var owed: Int64?

    static func load(_ path: String) throws -> CaptureJournal {
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
        return journal
    }

    func save(_ path: String, _ calls: SystemCalls, access: PoolAccess) throws {
        try DurableFile.replace(path, with: Array(try JSONEncoder().encode(self)), calls, access: access)
    }
}

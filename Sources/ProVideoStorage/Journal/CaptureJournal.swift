import Foundation
import Glibc

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
        return journal
    }

    func save(_ path: String, _ calls: SystemCalls, access: PoolAccess) throws {
        try DurableFile.replace(path, with: Array(try JSONEncoder().encode(self)), calls, access: access)
    }

    /// Reads an 8-byte little-endian counter (`progress`), 0 if the file is missing, short, or
    /// holds a count no pool could reach (above `Pool.maximumCapacity`): it is read from disk, so
    /// it is range-checked before any arithmetic uses it.
    static func readCounter(_ path: String) -> Int64 {
        guard let bytes = try? FileSystem.readSmallFile(path), bytes.count >= 8 else { return 0 }
        let count = word(bytes, at: 0)
        return count <= UInt64(Pool.maximumCapacity) ? Int64(count) : 0
    }

    private static func word(_ bytes: [UInt8], at start: Int) -> UInt64 {
        (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[start + $1]) << (8 * $1) }
    }

    /// Offsets of the two commit records: separate sectors, so one torn write spoils one only.
    static let commitSlots: [Int64] = [0, 512]

    /// Reads the committed length from `commit`: the larger of the two records whose check word
    /// matches (the committed length only grows), 0 when there is none. A length past
    /// `Int64.max` reads as `Int64.max`: a salvage keeps no more than `data` holds, and says so.
    package static func readCommitted(_ path: String) -> Int64 {
        guard let bytes = try? FileSystem.readSmallFile(path) else { return 0 }
        return commitSlots.map { Int($0) }.filter { $0 + 16 <= bytes.count }.map { start -> Int64 in
            let length = word(bytes, at: start)
            return word(bytes, at: start + 8) == length ^ commitCheck ? Int64(clamping: length) : 0
        }.max() ?? 0
    }

    /// Bytes of one commit record: the length, then the length XOR `commitCheck`.
    static let commitRecordLength = 16

    static let commitCheck: UInt64 = 0x5052_4F56_4944_454F

    /// The 16-byte commit record for `length`.
    static func commitRecord(_ length: Int64, into bytes: UnsafeMutableRawBufferPointer) {
        bytes.storeBytes(of: UInt64(bitPattern: length).littleEndian, toByteOffset: 0, as: UInt64.self)
        bytes.storeBytes(of: (UInt64(bitPattern: length) ^ commitCheck).littleEndian, toByteOffset: 8, as: UInt64.self)
    }
}

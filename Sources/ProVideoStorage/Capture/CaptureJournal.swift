import Foundation
import Glibc

/// What a capture keeps on disk in `capture/` so that any process can see it and a crash
/// can be salvaged:
///
///     capture.json   this journal, written once (durably) before the capture takes the reserve
///     data           the reserve, renamed: the recording's bytes from offset 0
///     progress       8 bytes: bytes landed so far (not flushed; for remainingCapacity)
///     commit         two 16-byte commit records at offsets 0 and 512, written alternately
///                    with O_DSYNC after fdatasync: a torn write spoils one, the other holds
/// A capture's phase, as its journal records it.
enum CapturePhase: String, Codable, Sendable {
    /// The journal is durable; the reserve may not have been taken yet.
    case starting
    /// `capture/data` is the recording, written by a live recorder (or a dead one).
    case recording
    /// The recording is placed or discarded (`reserveTarget` says what reserve to rebuild).
    case completing
}

package struct CaptureJournal: Codable, Sendable, Equatable {
    var id: String
    /// Absolute path the recording moves to on finish.
    var destination: String
    /// The reserve's size when the capture took it, in bytes: its capacity.
    var capacityAtStart: Int64
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
    /// Set once the recording is placed: the reserve to rebuild, in bytes.
    var reserveTarget: Int64?
    /// Where the recording was placed.
    var placedAt: String?
    /// Finishing keeps the recording in the pool to land in the background (`provideo land`)
    /// when its destination is on another filesystem.
    var landInBackground: Bool?

    static func load(_ path: String) throws -> CaptureJournal {
        let bytes = try FileSystem.readSmallFile(path)
        do {
            return try JSONDecoder().decode(CaptureJournal.self, from: Data(bytes))
        } catch {
            throw ProVideoError(.corruptState, "the capture journal \(path) is unreadable (\(error))", path: path)
        }
    }

    func save(_ path: String, _ calls: SystemCalls, access: PoolAccess) throws {
        try FileSystem.replaceDurably(path, with: Array(try JSONEncoder().encode(self)), calls, access: access)
    }

    /// Reads an 8-byte little-endian counter (`progress`), 0 if the file is missing or short.
    static func readCounter(_ path: String) -> Int64 {
        guard let bytes = try? FileSystem.readSmallFile(path), bytes.count >= 8 else { return 0 }
        return Int64(bitPattern: word(bytes, at: 0))
    }

    private static func word(_ bytes: [UInt8], at start: Int) -> UInt64 {
        (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[start + $1]) << (8 * $1) }
    }

    /// Offsets of the two commit records: separate sectors, so one torn write spoils one only.
    static let commitSlots: [Int64] = [0, 512]

    /// Reads the committed length from `commit`: the larger of the two records whose check word
    /// matches (the committed length only grows), 0 when there is none.
    package static func readCommitted(_ path: String) -> Int64 {
        guard let bytes = try? FileSystem.readSmallFile(path) else { return 0 }
        return commitSlots.map { Int($0) }.filter { $0 + 16 <= bytes.count }.map { start -> Int64 in
            let length = word(bytes, at: start)
            return word(bytes, at: start + 8) == length ^ commitCheck ? Int64(length) : 0
        }.max() ?? 0
    }

    /// Bytes of one commit record: the length, then the length XOR `commitCheck`.
    static let commitRecordLength = 16

    static let commitCheck: UInt64 = 0x5052_4F56_4944_454F

    /// The 16-byte commit record for `length`.
    static func commitRecord(_ length: Int64, into bytes: UnsafeMutableRawBufferPointer) {
        bytes.storeBytes(of: UInt64(length).littleEndian, toByteOffset: 0, as: UInt64.self)
        bytes.storeBytes(of: (UInt64(length) ^ commitCheck).littleEndian, toByteOffset: 8, as: UInt64.self)
    }
}

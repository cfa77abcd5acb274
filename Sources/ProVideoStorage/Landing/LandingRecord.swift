import Foundation
import Synchronization

/// A landing recording's progress, kept in the pool beside it as `<recording>.landing` and
/// replaced durably after each chunk, so a killed transfer resumes at the last chunk that was
/// flushed at the destination and verifies what landed against the chunks' checksums.
struct LandingRecord: Codable, Sendable, Equatable {
    /// Bytes per chunk: the unit of resuming, of checksums and of progress saves.
    static let chunk: Int64 = 8 << 20

    /// Bytes written and flushed (fdatasync) at the destination's temporary file, a whole
    /// number of chunks (or the length).
    var landed: Int64 = 0
    /// SHA-256 (hex) of each landed chunk as it was read from the pool's copy.
    var digests: [String] = []
    /// Failed attempts since the last success.
    var attempts = 0
    var lastError: String?
    /// When the next attempt is due, in seconds since 1970 (back-off after a failure).
    var nextAttemptAt: Double?
    /// The rate of the last chunk, in bytes per second.
    var bytesPerSecond: Double?

    static func path(forHeld held: String) -> String { held + ".landing" }

    /// The record beside `held`; a new one when there is none (or it is unreadable: the
    /// transfer then starts over and verifies everything).
    /// A record whose numbers no transfer could have written (a negative or impossible
    /// `landed`, more digests than chunks, a runaway `attempts`, a time that is no time) counts
    /// as unreadable.
    /// A failure this process could not record (`saveFailure`) stands in for the record on disk.
    static func load(forHeld held: String) -> LandingRecord {
        if let unrecorded = unrecorded.withLock({ $0[held] }) { return unrecorded }
        guard let bytes = try? FileSystem.readSmallFile(path(forHeld: held)),
              let record = try? JSONDecoder().decode(LandingRecord.self, from: Data(bytes)), record.isInRange else {
            return LandingRecord()
        }
        return record
    }

    /// Failed attempts whose record could not be saved beside their take (a full or read-only
    /// pool), by held path: kept in this process so that its back-off still applies (`land
    /// --watch` must not copy the whole take again at every interval).
    private static let unrecorded = Mutex<[String: LandingRecord]>([:])

    /// Saves the record of a failed attempt; when that fails too, keeps it in this process.
    /// - Returns: nil when saved; else why it could not be, for the failure's own message.
    func saveFailure(forHeld held: String, _ calls: SystemCalls, access: PoolAccess) -> String? {
        do {
            try save(forHeld: held, calls, access: access)
            return nil
        } catch {
            Self.unrecorded.withLock { $0[held] = self }
            return (error as? ProVideoError)?.message ?? "\(error)"
        }
    }

    private var isInRange: Bool {
        (0...Pool.maximumCapacity).contains(landed) && Int64(digests.count) <= landed / Self.chunk + 1
            && (0...1_000_000).contains(attempts) && (nextAttemptAt?.isFinite ?? true)
            && (bytesPerSecond.map { $0.isFinite && $0 >= 0 } ?? true)
    }

    /// Replaces the record on disk durably; once saved, it is the record again (not one this
    /// process kept after a failed save).
    func save(forHeld held: String, _ calls: SystemCalls, access: PoolAccess) throws {
        try DurableFile.replace(Self.path(forHeld: held), with: Array(try JSONEncoder().encode(self)), calls,
                                      access: access)
        _ = Self.unrecorded.withLock { $0.removeValue(forKey: held) }
    }

    /// The wait before the next attempt after `attempts` failures: 5 s × 2^(attempts-1) by
    /// default (`base`), at most 5 minutes.
    static func backoff(attempts: Int, base: Double) -> Double {
        min(base * Double(1 << min(max(attempts - 1, 0), 16)), 300)
    }
}

import FoundationEssentials
import Synchronization
import ProVideoSystem

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

    /// The record beside `held`; a new one when there is none, or when it is unreadable or out
    /// of range (`decode`): the transfer then starts over and verifies everything, and `status`
    /// shows nothing landed and no rate rather than a number no transfer measured.
    /// A failure this process could not record (`saveFailure`) stands in for the record on disk.
    static func load(forHeld held: String) -> LandingRecord {
        if let unrecorded = unrecorded.withLock({ $0[held] }) { return unrecorded }
        let path = path(forHeld: held)
        guard let bytes = try? FileSystem.readSmallFile(path), let record = try? decode(bytes, path: path) else {
            return LandingRecord()
        }
        return record
    }

    /// The fastest rate a record may hold, in bytes per second: 1 TB/s, beyond any disk or
    /// link a take lands over (a chunk of 8 MiB in 8 µs).
    static let maximumRate = 1e12
    /// The latest time a record may name, in seconds since 1970 (the year 5138): a back-off is
    /// at most 5 minutes.
    static let latestTime = 1e11

    /// Decodes a landing record (`path` names it in errors) and range-checks every number in
    /// it once (Docs/SECURITY.md rule 7): any pool member may write the file.
    /// - Throws: `.corruptState` naming the file and the field when it is not JSON, or when a
    ///   number is one no transfer could have written: `landed` below 0 or above
    ///   `Pool.maximumCapacity`, more `digests` than chunks, `attempts` below 0 or above a
    ///   million, `nextAttemptAt` not a time from 0 to `latestTime`, `bytesPerSecond` not a
    ///   rate from 0 to `maximumRate` (1e300 would trap where it is shown as a whole number).
    static func decode(_ bytes: [UInt8], path: String) throws -> LandingRecord {
        let record: LandingRecord
        do {
            record = try JSONDecoder().decode(LandingRecord.self, from: Data(bytes))
        } catch {
            throw ProVideoError(.corruptState, "the landing record \(path) is unreadable (\(error))", path: path)
        }
        func corrupt(_ field: String, _ value: String, _ rule: String) -> ProVideoError {
            ProVideoError(.corruptState, "the landing record \(path) is corrupt: its \(field) \(value) is not \(rule)",
                          path: path)
        }
        guard (0...Pool.maximumCapacity).contains(record.landed) else {
            throw corrupt("landed", "\(record.landed)", "a length (0 to \(Pool.maximumCapacity) bytes)")
        }
        guard Int64(record.digests.count) <= record.landed / chunk + 1 else {
            throw corrupt("digests", "(\(record.digests.count) of them)", "one per chunk landed")
        }
        guard (0...1_000_000).contains(record.attempts) else {
            throw corrupt("attempts", "\(record.attempts)", "a number of attempts (0 to 1000000)")
        }
        if let next = record.nextAttemptAt, !(next.isFinite && (0...latestTime).contains(next)) {
            throw corrupt("nextAttemptAt", "\(next)", "a time (0 to \(latestTime) seconds since 1970)")
        }
        if let rate = record.bytesPerSecond, !(rate.isFinite && (0...maximumRate).contains(rate)) {
            throw corrupt("bytesPerSecond", "\(rate)", "a rate (0 to \(maximumRate) bytes per second)")
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

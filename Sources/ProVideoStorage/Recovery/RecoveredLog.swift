import FoundationEssentials
import Glibc
import ProVideoSystem

/// A recording salvaged from a capture whose recorder died.
public struct SalvagedRecording: Codable, Sendable, Equatable {
    /// Where it went: the destination, a "recovered" sibling of it, or a file in the pool.
    public var path: String
    /// Its length in bytes: the capture's last committed length.
    public var length: Int64
    /// When it was salvaged, in seconds since 1970.
    public var salvagedAt: Double
    /// What the salvage found wrong and how it dealt with it (a commit record claiming more
    /// than the file holds); nil when nothing was.
    public var note: String? = nil
}

/// The salvage log, `recovered.json`: every recording salvaged from a dead recorder, whichever
/// process salvaged it, and where it went.
struct RecoveredLog {
    let file: String
    let calls: SystemCalls
    let access: PoolAccess

    /// The log's entries, oldest first; empty when there is no log.
    /// - Throws: `.corruptState` naming the file when it is there but is not a log this pool
    ///   wrote (unreadable, or not its JSON: a number no `Int64` holds).
    func entries() throws -> [SalvagedRecording] {
        let bytes: [UInt8]
        do {
            bytes = try FileSystem.readSmallFile(file)
        } catch let error as ProVideoError where error.errno == ENOENT {
            return []
        }
        // An entry's impossible length or time is the display's to name (`provideo list`).
        do {
            return try JSONDecoder().decode([SalvagedRecording].self, from: Data(bytes))
        } catch {
            throw ProVideoError(.corruptState, "\(file) is not a salvage log this pool can read (\(error))", path: file)
        }
    }

    /// Adds `recording` to the log, so `provideo list` shows it whichever process
    /// salvaged it. The log keeps the newest entries that fit in the room the pool's headroom
    /// holds for it (`MetadataHeadroom.recoveredLogBytes`, about 100 entries): the oldest are
    /// dropped, so a full filesystem can always take the next salvage's log.
    func append(_ recording: SalvagedRecording) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted]
        var kept: [SalvagedRecording]
        do {
            kept = try entries() + [recording]
        } catch {
            // Not read, so never overwritten: kept beside for whoever looks, and a new log begun.
            try FileSystem.rename(file, file + ".unreadable")
            kept = [recording]
        }
        var bytes = try encoder.encode(kept)
        while bytes.count > MetadataHeadroom.recoveredLogBytes && kept.count > 1 {
            kept.removeFirst()
            bytes = try encoder.encode(kept)
        }
        try DurableFile.replace(file, with: Array(bytes), calls, access: access)
    }
}

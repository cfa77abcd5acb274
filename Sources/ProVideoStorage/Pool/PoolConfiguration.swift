import FoundationEssentials
import ProVideoSystem

/// The pool's durable configuration, stored as `pool.json`.
struct PoolConfiguration: Codable, Sendable, Equatable {
    /// 2: several captures at once (`captures/`), `maxCaptures`, `bandwidth`.
    static let currentFormat = 2

    var format: Int
    /// The size the administrator chose, in bytes.
    var initialCapacity: Int64
    /// The facts measured when the pool was created.
    var storage: StorageFacts
    /// Whether the reserve was written with zeros once at creation (`create --zero`).
    var zeroFilled: Bool
    /// How many captures may run at once; nil: no limit. Pools of format 1 took one.
    var maxCaptures: Int?
    /// The durable write bandwidth the pool can sustain, in bits per second (measured at
    /// create or set by the administrator); nil: unknown, captures are not admitted against it.
    var bandwidth: Int64?

    /// The most captures that may run at once, nil for no limit.
    var captureLimit: Int? { format < 2 ? 1 : maxCaptures }

    static func load(_ path: String) throws -> PoolConfiguration {
        let bytes = try FileSystem.readSmallFile(path)
        let configuration: PoolConfiguration
        do {
            configuration = try JSONDecoder().decode(PoolConfiguration.self, from: Data(bytes))
        } catch {
            throw ProVideoError(.corruptState,
                                "the pool state file \(path) is unreadable (\(error)); restore it from a backup "
                                + "or remove the pool directory and create the pool again", path: path)
        }
        if configuration.format > currentFormat {
            throw ProVideoError(.corruptState,
                                "the pool at \(path) has format \(configuration.format), newer than this "
                                + "version understands (\(currentFormat)); use a newer provideo", path: path)
        }
        if let field = configuration.fieldOutOfRange {
            throw ProVideoError(.corruptState,
                                "the pool state file \(path) is corrupt: \(field); restore it from a backup or "
                                + "remove the pool directory and create the pool again", path: path)
        }
        return configuration
    }

    /// The first number read from `pool.json` that no pool could have, said with its range;
    /// nil when every one is in range. Checked once, when decoded, so that no arithmetic on the
    /// pool's sizes ever meets an impossible value.
    var fieldOutOfRange: String? {
        func isPowerOfTwo(_ value: Int, upTo limit: Int) -> Bool { value > 0 && value <= limit && value & (value - 1) == 0 }
        if format < 1 { return "format \(format) (at least 1)" }
        if !(0...Pool.maximumCapacity).contains(initialCapacity) {
            return "initialCapacity \(initialCapacity) (0 to \(Pool.maximumCapacity) bytes)"
        }
        if !isPowerOfTwo(storage.blockSize, upTo: 1 << 20) { return "storage.blockSize \(storage.blockSize) (a power of two up to 1 MiB)" }
        for (name, value) in [("memory", storage.directIOAlignment.memory), ("offset", storage.directIOAlignment.offset)]
            where !isPowerOfTwo(value, upTo: 1 << 20) {
            return "storage.directIOAlignment.\(name) \(value) (a power of two up to 1 MiB)"
        }
        if let maxCaptures, !(1...4096).contains(maxCaptures) { return "maxCaptures \(maxCaptures) (1 to 4096)" }
        if let bandwidth, bandwidth < 0 { return "bandwidth \(bandwidth) (bits per second, not negative)" }
        return nil
    }

    func save(_ path: String, _ calls: SystemCalls, access: PoolAccess) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try DurableFile.replace(path, with: Array(try encoder.encode(self)), calls, access: access)
    }
}

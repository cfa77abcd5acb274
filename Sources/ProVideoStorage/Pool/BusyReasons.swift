
/// Why a pool cannot start a capture now (Apple: `AVProVideoStorage.BusyReasons`).
public struct BusyReasons: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// A capture is recording into the pool.
    public static let capturing = BusyReasons(rawValue: 1 << 0)
    /// The reserve is being restored toward `initialCapacity`.
    public static let replenishing = BusyReasons(rawValue: 1 << 1)
    /// The reserve is being grown or shrunk by a resize.
    public static let adjustingCapacity = BusyReasons(rawValue: 1 << 2)

    static let all: [(BusyReasons, String)] = [
        (.capturing, "capturing"), (.replenishing, "replenishing"), (.adjustingCapacity, "adjustingCapacity"),
    ]

    /// The reasons' names, e.g. `["capturing"]`.
    public var names: [String] { Self.all.filter { contains($0.0) }.map(\.1) }

    public var description: String { names.isEmpty ? "idle" : names.joined(separator: ", ") }
}

/// Coded as the reasons' names (`["capturing"]`), the shape `provideo status --json` has
/// always printed; names this version does not know are ignored when decoding.
extension BusyReasons: Codable {
    public init(from decoder: any Decoder) throws {
        let names = try decoder.singleValueContainer().decode([String].self)
        self = BusyReasons(Self.all.filter { names.contains($0.1) }.map(\.0))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(names)
    }
}

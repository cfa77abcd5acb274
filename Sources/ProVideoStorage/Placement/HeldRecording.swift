import FoundationEssentials
import ProVideoSystem

/// A recording the pool holds because its destination could not take it; its note is stored
/// beside it as `<recording>.json`.
public struct HeldRecording: Codable, Sendable {
    /// Where the recording is, inside the pool's `recordings/`.
    public var path: String
    /// Where it was meant to go.
    public var destination: String
    /// Its length in bytes.
    public var length: Int64
    /// Why it could not go there.
    public var reason: String
    /// Set while `provideo move` moves it there, so a killed move is finished by `repair(control:)`.
    public var movingTo: String?
    /// true while it waits to land at its destination in the background (`provideo land`).
    public var landing: Bool?
    /// true when its note cannot be read or decoded: the recording is there, and where it was
    /// meant to go is unknown (`destination` is empty, `reason` says why, `length` is the
    /// file's); `provideo move HELD DEST` places it.
    public var noteUnreadable: Bool?

    /// Every file the pool names after a held recording `held`: its note, its landing record,
    /// and each one's temporary while it is replaced durably. A held name leaves room for the
    /// longest (`RecordingPlacement.heldName`), so that none of them can fail with ENAMETOOLONG.
    static func companions(of held: String) -> [String] {
        [held + ".json", held + ".json.tmp", LandingRecord.path(forHeld: held), LandingRecord.path(forHeld: held) + ".tmp"]
    }

    func save(_ file: String, _ calls: SystemCalls, access: PoolAccess) throws {
        try DurableFile.replace(file, with: Array(try JSONEncoder().encode(self)), calls, access: access)
    }
}

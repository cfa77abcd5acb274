import Glibc
import ProVideoSystem

/// Which directory entry a destination names: its directory's device and inode, and the name.
/// Two spellings of one entry (a bind mount of the directory, a symlinked parent the resolver
/// could not see through, another path to the same export) have one identity, so "one
/// destination per take" holds for the entry, not for the text.
struct DestinationIdentity: Equatable {
    let deviceMajor: UInt32
    let deviceMinor: UInt32
    let directoryInode: UInt64
    let name: String

    /// The identity of `destination` (an absolute path); nil when its directory cannot be
    /// looked at now (gone, not searchable), where only the text can be compared.
    init?(_ destination: String) {
        let slash = destination.lastIndex(of: "/") ?? destination.startIndex
        let directory = slash == destination.startIndex ? "/" : String(destination[..<slash])
        guard let facts = try? FileSystem.facts(directory), facts.mode & UInt32(S_IFMT) == UInt32(S_IFDIR) else { return nil }
        (deviceMajor, deviceMinor, directoryInode) = (facts.deviceMajor, facts.deviceMinor, facts.inode)
        name = String(destination[destination.index(after: slash)...])
    }

    /// Whether `one` and `other` name the same entry: the same resolved text, or the same
    /// identity where both directories can be looked at. A directory that cannot be looked at
    /// leaves the text as the only evidence; the rename that ends the take refuses to replace
    /// an existing file (`RENAME_NOREPLACE`) whatever this says.
    static func same(_ one: String, _ other: String) -> Bool {
        if one == other { return true }
        guard let first = DestinationIdentity(one), let second = DestinationIdentity(other) else { return false }
        return first == second
    }
}

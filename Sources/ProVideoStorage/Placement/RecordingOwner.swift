import Glibc
import ProVideoSystem

/// Whose a recording is: the user every step that places, copies or lands it acts as
/// (Docs/SECURITY.md). A capture's owner is its directory's owner (`captures/<id>/`, made by
/// the recorder; only root could give it to someone else), a held recording's is its file's.
/// Never the process that salvages or lands it.
struct RecordingOwner: Equatable {
    let uid: uid_t
    /// The owner's primary group (passwd), or the file's group for a user without an entry.
    let gid: gid_t

    init(uid: uid_t, fallbackGroup: gid_t) {
        self.uid = uid
        self.gid = ProcessIdentity.primaryGroup(of: uid) ?? fallbackGroup
    }

    /// The owner of a capture: its directory's, who must also own `data`, a file no one else
    /// could have written (`PoolAccess.openCreatingOwn`).
    /// - Throws: `.corruptState` when they differ or `data` is writable by others: a member
    ///   could have moved a pool file or directory of someone else's there to act as them.
    static func of(capture files: CaptureFiles) throws -> RecordingOwner {
        let directory = try FileSystem.facts(files.directory), data = try FileSystem.facts(files.data)
        guard data.uid == directory.uid else {
            throw ProVideoError(.corruptState, "\(files.data) belongs to \(ProcessIdentity.userName(data.uid)) but its "
                                + "capture to \(ProcessIdentity.userName(directory.uid)): it is not a capture's own file; "
                                + "it is left as it is", path: files.data)
        }
        try requireOwnersOwn(data, files.data)
        return RecordingOwner(uid: directory.uid, fallbackGroup: directory.gid)
    }

    /// The owner of an open held recording, whose bytes only that owner can have written.
    /// - Throws: `.corruptState` when the file is writable by its group or others, or has more
    ///   than one link.
    static func of(_ file: FileDescriptor) throws -> RecordingOwner {
        let facts = try file.facts()
        try requireOwnersOwn(facts, file.path)
        return RecordingOwner(uid: facts.uid, fallbackGroup: facts.gid)
    }

    /// A file's owner is whom root acts as only when no one else could have written it.
    private static func requireOwnersOwn(_ facts: FileFacts, _ path: String) throws {
        guard facts.mode & 0o022 == 0, facts.linkCount == 1, facts.mode & UInt32(S_IFMT) == UInt32(S_IFREG) else {
            throw ProVideoError(.corruptState, "\(path) is writable by others than its owner "
                                + "\(ProcessIdentity.userName(facts.uid)) (mode \(String(facts.mode & 0o7777, radix: 8)), "
                                + "\(facts.linkCount) link(s)), so it could be anyone's: nothing is done for it as its owner; "
                                + "its owner can `chmod go-w` it and run the command again", path: path)
        }
    }

    var name: String { ProcessIdentity.userName(uid) }

    /// Runs `body` with this user's filesystem identity (`ThreadIdentity`): as root, what it
    /// creates is theirs and it reaches only what they could.
    func acting<T>(_ body: () throws -> T) throws -> T { try ThreadIdentity.acting(as: uid, gid, body) }
}

import CProVideo
import Glibc

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

    /// The owner of a capture: its directory's.
    static func of(capture files: CaptureFiles) throws -> RecordingOwner {
        let facts = try FileSystem.facts(files.directory)
        return RecordingOwner(uid: facts.uid, fallbackGroup: facts.gid)
    }

    /// The owner of an open file.
    static func of(_ file: FileDescriptor) throws -> RecordingOwner {
        let facts = try file.facts()
        return RecordingOwner(uid: facts.uid, fallbackGroup: facts.gid)
    }

    var name: String { ProcessIdentity.userName(uid) }

    /// Runs `body` with this user's filesystem identity (`ThreadIdentity`): as root, what it
    /// creates is theirs and it reaches only what they could.
    func acting<T>(_ body: () throws -> T) throws -> T { try ThreadIdentity.acting(as: uid, gid, body) }
}

import Glibc
import ProVideoSystem

/// Who may use a pool (the access model, `Docs/POOL-LAYOUT.md`): the pool directory's owner
/// and group. The directory is `owner:group` with mode 2770 (setgid, so every file created in
/// it by any member gets the pool's group); every file of the pool is 0660 and every directory
/// 2770, set explicitly so that no process's umask narrows them; a file a root process creates
/// (a rebuilt reserve, a journal) is given the pool's owner and group. Nobody outside the
/// owner and the group can open a pool file, read a held recording or the reserve's stale
/// blocks. It also names the spare that holds the room the pool's own files may draw on
/// (`MetadataSpare`), so that every pool file is made the same way.
struct PoolAccess: Sendable, Equatable {
    let owner: uid_t
    let group: gid_t
    /// The pool's spare (nil while a pool is being created).
    var spare: MetadataSpare? = nil

    static let fileMode: mode_t = 0o660
    static let directoryMode: mode_t = 0o2770

    /// The pool directory's owner and group.
    static func of(directory: String) throws -> PoolAccess {
        let facts = try FileSystem.facts(directory)
        return PoolAccess(owner: facts.uid, group: facts.gid, spare: MetadataSpare(path: directory + "/spare"))
    }

    /// Gives a pool file or directory that this process created or may change the pool's mode
    /// and, as root, its owner and group. A file another user created is left as it is (only
    /// its owner or root may change it; its group and mode are already the pool's).
    func apply(to fd: FileDescriptor, directory: Bool = false) throws {
        let facts = try fd.facts()
        let mode = directory ? Self.directoryMode : Self.fileMode
        var changedOwner = false
        if ProcessIdentity.isRoot && (facts.uid != owner || facts.gid != group) {
            try fd.setOwner(owner, group)
            changedOwner = true
        }
        guard ProcessIdentity.isRoot || facts.uid == ProcessIdentity.user else { return }
        if !ProcessIdentity.isRoot && facts.gid != group && ProcessIdentity.isMember(of: group) {
            try fd.setOwner(facts.uid, group)
            changedOwner = true
        }
        // chown(2) may clear the setgid bit: the mode goes last.
        if changedOwner || facts.mode & 0o7777 != mode { try fd.setMode(mode) }
    }

    /// open(2) with `O_CREAT`: a pool file, created with the pool's mode, owner and group
    /// (`apply(to:)`) or opened as it is.
    /// mkdir(2) of a directory of the pool, given the pool's group and mode; an existing one is
    /// fine. `keepingOwner`: it stays its creator's (a capture's directory says whose the
    /// capture is, `RecordingOwner`), with the pool's group and mode.
    func makeDirectory(_ path: String, keepingOwner: Bool = false) throws {
        try FileSystem.makeDirectory(path)
        let directory = try FileDescriptor.open(path, O_RDONLY | O_DIRECTORY)
        try (keepingOwner ? PoolAccess(owner: try directory.facts().uid, group: group) : self)
            .apply(to: directory, directory: true)
    }

    func openCreating(_ path: String, _ flags: Int32) throws -> FileDescriptor {
        let fd = try FileDescriptor.open(path, flags | O_CREAT, mode: Self.fileMode)
        try apply(to: fd)
        return fd
    }

    /// Mode of a file only its creator writes (a capture's `data`): the group reads it.
    static let ownFileMode: mode_t = 0o640

    /// open(2) with `O_CREAT | O_EXCL`: a file of the pool that stays its creator's, mode 0640
    /// with the pool's group. Its owner is then who wrote it: no member can have changed its
    /// bytes (Docs/SECURITY.md, `RecordingOwner`).
    func openCreatingOwn(_ path: String, _ flags: Int32) throws -> FileDescriptor {
        let fd = try FileDescriptor.open(path, flags | O_CREAT | O_EXCL, mode: Self.ownFileMode)
        let facts = try fd.facts()
        if facts.gid != group && (ProcessIdentity.isRoot || ProcessIdentity.isMember(of: group)) {
            try fd.setOwner(facts.uid, group)
        }
        try fd.setMode(Self.ownFileMode)
        return fd
    }

    /// Refuses a user who may not read, write and enter the pool directory `path`.
    /// - Throws: `.permissionDenied` naming the owner and the group to join.
    static func requireAccess(to path: String) throws {
        let refused = FileSystem.accessError(path)
        if refused == EACCES || refused == EPERM { throw try of(directory: path).accessDenied(path, errno: refused) }
    }

    /// The error for a user who cannot use the pool: who owns it, and the group to join.
    private func accessDenied(_ path: String, errno: Int32) -> ProVideoError {
        let user = ProcessIdentity.userName(ProcessIdentity.user)
        let groupName = ProcessIdentity.groupName(group)
        var error = ProVideoError(
            .permissionDenied,
            "user \(user) cannot use the pool at \(path): it belongs to \(ProcessIdentity.userName(owner)) and group "
            + "\(groupName); ask its administrator to add you to the group (`usermod -aG \(groupName) \(user)`, "
            + "then log in again)", errno: errno, path: path)
        error.cause = SystemCallError(systemCall: "access", errno: errno)
        return error
    }
}

import CProVideo
import Glibc

/// Runs work on the calling thread with another user's filesystem identity (fsuid, fsgid and
/// that user's groups): what root does on that user's behalf (copying their file) can then create
/// files only where that user could, and a path the user swapped for a symbolic link leads
/// nowhere the user could not write anyway. Only the calling thread changes (see
/// `pv_thread_fs_identity`); the process keeps root's identity.
package enum ThreadIdentity {
    /// Runs `body` as `uid`:`gid` with `uid`'s supplementary groups, then restores the thread's
    /// identity. Without root, or for root's own files, runs `body` as is.
    /// - Throws: `.permissionDenied` when the identity cannot be taken or given back (the
    ///   thread is then not used again: the caller fails); whatever `body` throws.
    package static func acting<T>(as uid: uid_t, _ gid: gid_t, _ body: () throws -> T) throws -> T {
        guard ProcessIdentity.isRoot, uid != 0 else { return try body() }
        let own = supplementaryGroups()
        let theirs = groups(of: uid, gid)
        let rc = theirs.withUnsafeBufferPointer { pv_thread_fs_identity(uid, gid, $0.baseAddress, Int32($0.count)) }
        guard rc == 0 else {
            throw ProVideoError.system("setfsuid", errno: -rc, path: nil)
        }
        defer {
            let back = own.withUnsafeBufferPointer { pv_thread_fs_identity(0, getegid(), $0.baseAddress, Int32($0.count)) }
            precondition(back == 0, "could not give the thread back its own identity")
        }
        return try body()
    }

    private static func supplementaryGroups() -> [gid_t] {
        var groups = [gid_t](repeating: 0, count: Int(max(getgroups(0, nil), 0)))
        let count = getgroups(Int32(groups.count), &groups)
        return Array(groups.prefix(Int(max(count, 0))))
    }

    /// getgrouplist(3) for `uid`'s name; just `gid` for a user without a name.
    private static func groups(of uid: uid_t, _ gid: gid_t) -> [gid_t] {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 65536)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, result != nil, let name = entry.pw_name else {
            return [gid]
        }
        var count: Int32 = 64
        var groups = [gid_t](repeating: 0, count: Int(count))
        if getgrouplist(name, gid, &groups, &count) < 0 {
            groups = [gid_t](repeating: 0, count: Int(count))
            _ = getgrouplist(name, gid, &groups, &count)
        }
        return Array(groups.prefix(Int(count)))
    }
}

import Glibc

/// Who this process is: the effective user and group that own what it creates, its umask,
/// and the names behind the numbers, for messages and for `create --group`.
package enum ProcessIdentity {
    /// geteuid(2).
    package static var user: uid_t { geteuid() }
    /// getegid(2).
    package static var group: gid_t { getegid() }
    package static var isRoot: Bool { geteuid() == 0 }
    /// getpid(2).
    package static var pid: Int32 { getpid() }

    /// kill(2) with SIGKILL on this process, as a power cut or `kill -9` would end it.
    static func killImmediately() -> Never {
        kill(getpid(), SIGKILL)
        fatalError("SIGKILL did not end the process")
    }

    /// The file-mode creation mask. umask(2) can only be read by setting it, so it is set back
    /// at once (no other thread of the library creates files meanwhile).
    package static var umask: mode_t {
        let mask = Glibc.umask(0)
        Glibc.umask(mask)
        return mask
    }

    /// getpwuid_r(3): the user's name, or the number when it has none.
    package static func userName(_ uid: uid_t) -> String {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return "\(uid)" }
        return String(cString: entry.pw_name)
    }

    /// getpwuid_r(3): the user's primary group; nil for a user without an entry.
    package static func primaryGroup(of uid: uid_t) -> gid_t? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return entry.pw_gid
    }

    /// getgrgid_r(3): the group's name, or the number when it has none.
    package static func groupName(_ gid: gid_t) -> String {
        var entry = Glibc.group()
        var result: UnsafeMutablePointer<Glibc.group>?
        var buffer = [CChar](repeating: 0, count: 65536)
        guard getgrgid_r(gid, &entry, &buffer, buffer.count, &result) == 0, result != nil else { return "\(gid)" }
        return String(cString: entry.gr_name)
    }

    /// getgrnam_r(3): the group named `name` (or given as a number), nil when there is none.
    package static func groupID(named name: String) -> gid_t? {
        var entry = Glibc.group()
        var result: UnsafeMutablePointer<Glibc.group>?
        var buffer = [CChar](repeating: 0, count: 65536)
        if getgrnam_r(name, &entry, &buffer, buffer.count, &result) == 0, result != nil { return entry.gr_gid }
        return gid_t(name)
    }

    /// getgroups(2): whether `gid` is this process's group or one of its supplementary groups.
    package static func isMember(of gid: gid_t) -> Bool {
        if getegid() == gid { return true }
        let count = getgroups(0, nil)
        guard count > 0 else { return false }
        var groups = [gid_t](repeating: 0, count: Int(count))
        return getgroups(count, &groups) >= 0 && groups.contains(gid)
    }
}

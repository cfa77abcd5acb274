import Foundation
import Glibc
import ProVideoStorage

/// Users and groups a test creates (as root) and removes, named for the test process so that two
/// test processes on one machine never share them: `pvt<pid>-<role>` (useradd allows 32
/// characters; a pid has at most 7 digits). Before creating them, and after, the fixture
/// kills every process running as one of them (by pid, found in `/proc`), then deletes them and
/// checks they are gone: a user or group it cannot remove is the fixture's error, thrown where
/// it happens, never a `useradd` failure of a later test. Users and groups a killed test process
/// left (their pid no longer runs) are removed the same way at the first use in a process.
package enum TestUsers {
    /// The name prefix of this process's users and groups.
    package static let prefix = "pvt\(getpid())-"

    package static func name(_ role: String) -> String { prefix + role }

    /// A failure of the fixture itself: a user or group it could not create or remove.
    package struct FixtureError: Error, CustomStringConvertible {
        package let description: String
    }

    private static let sweptStale: Void = {
        for name in localNames() where isStale(name) {
            // Best effort: another process may be removing them at the same time.
            _ = try? remove(users: [name], groups: [])
        }
        for name in localNames(file: "/etc/group") where isStale(name) {
            _ = try? remove(users: [], groups: [name])
        }
    }()

    /// Creates `groups` (empty) and `users` (each with a group of its name and the listed
    /// supplementary groups), runs `body`, and removes them all, even when `body` throws.
    /// Whatever this process left under these names (a process with this pid before, or a
    /// failed removal) is removed first.
    package static func with<T>(groups: [String], users: [(name: String, groups: [String])],
                                _ body: () throws -> T) throws -> T {
        _ = sweptStale
        let userNames = users.map(\.name)
        let groupNames = groups + userNames
        try remove(users: userNames, groups: groupNames)
        var removed = false
        defer { if !removed { _ = try? remove(users: userNames, groups: groupNames) } }
        for group in groups { try command("/usr/sbin/groupadd", [group]) }
        for user in users {
            try command("/usr/sbin/useradd", ["-M", "-U"] + (user.groups.isEmpty ? [] : ["-G", user.groups.joined(separator: ",")])
                        + [user.name])
        }
        let result = try body()
        removed = true
        try remove(users: userNames, groups: groupNames)
        return result
    }

    /// Kills every process of `users`, deletes the users, then the groups, and checks none is left.
    package static func remove(users: [String], groups: [String]) throws {
        for user in users {
            guard let uid = uid(of: user) else { continue }
            try killProcesses(of: uid, user)
            try command("/usr/sbin/userdel", [user], absentStatus: 6)
            if Self.uid(of: user) != nil { throw FixtureError(description: "userdel \(user) left the user") }
        }
        for group in groups where localNames(file: "/etc/group").contains(group) {
            try command("/usr/sbin/groupdel", [group], absentStatus: 6)
            if localNames(file: "/etc/group").contains(group) {
                throw FixtureError(description: "groupdel \(group) left the group")
            }
        }
    }

    /// Names of the test users or groups in a local account file (what useradd writes).
    private static func localNames(file: String = "/etc/passwd") -> [String] {
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            let name = line.prefix { $0 != ":" }
            return name.hasPrefix("pvt") ? String(name) : nil
        }
    }

    /// A name of the form `pvt<pid>-…` whose pid is this process (a leftover of an earlier
    /// process with this pid) or runs no more.
    private static func isStale(_ name: String) -> Bool {
        guard name.hasPrefix("pvt"), let dash = name.firstIndex(of: "-"),
              let pid = Int32(name[name.index(name.startIndex, offsetBy: 3)..<dash]) else { return false }
        return pid == getpid() || (kill(pid, 0) != 0 && errno == ESRCH)
    }

    private static func uid(of user: String) -> uid_t? {
        guard let text = try? String(contentsOfFile: "/etc/passwd", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: ":", omittingEmptySubsequences: false)
            if fields.count > 2, fields[0] == Substring(user) { return uid_t(fields[2]) }
        }
        return nil
    }

    /// The pids whose real, effective, saved or filesystem uid is `uid`.
    package static func processes(of uid: uid_t) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry -> pid_t? in
            guard let pid = pid_t(entry), pid != getpid(),
                  let status = try? String(contentsOfFile: "/proc/\(entry)/status", encoding: .utf8),
                  let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Uid:") }) else { return nil }
            let uids = line.split(whereSeparator: { $0 == "\t" || $0 == " " }).dropFirst().compactMap { uid_t($0) }
            return uids.contains(uid) ? pid : nil
        }
    }

    /// SIGKILLs every process of `uid`, by pid, until none is left (a process may fork meanwhile),
    /// for at most 10 s.
    private static func killProcesses(of uid: uid_t, _ user: String) throws {
        let deadline = MonotonicTime.now() + 10_000_000_000
        while true {
            let pids = processes(of: uid)
            if pids.isEmpty { return }
            guard MonotonicTime.now() < deadline else {
                throw FixtureError(description: "processes of \(user) (uid \(uid)) outlived SIGKILL for 10 s: \(pids)")
            }
            for pid in pids { kill(pid, SIGKILL) }
            usleep(20_000)
        }
    }

    /// Runs an account command; a failure is retried while the account files are locked by
    /// another process's command, and is otherwise the fixture's error. `absentStatus`: the exit
    /// status that means the name does not exist (done already).
    private static func command(_ tool: String, _ arguments: [String], absentStatus: Int32? = nil) throws {
        var attempt = 0
        while true {
            attempt += 1
            let result = try TestSupport.run(tool, arguments)
            if result.status == 0 || result.status == absentStatus { return }
            let locked = result.stderr.contains("lock") || result.stderr.contains("try again")
            if locked && attempt < 20 {
                usleep(250_000)
                continue
            }
            throw FixtureError(description: "`\(tool) \(arguments.joined(separator: " "))` failed (\(result.status)) "
                               + "after \(attempt) attempt(s): \(result.stderr)")
        }
    }
}

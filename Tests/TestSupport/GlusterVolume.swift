import CProVideo
import Foundation
import Glibc
import ProVideoStorage

/// A real single-node GlusterFS volume, mounted through FUSE with `mount -t glusterfs`, for the
/// landing tests (root only). `GlusterVolume.with` starts `glusterd` if it is not running,
/// creates and starts a one-brick volume, mounts it, and afterwards unmounts it, stops and
/// deletes the volume and, when no other test process is using it, stops the `glusterd` the
/// tests started, even when the body throws.
package struct GlusterVolume {
    package let name: String
    package let mountPoint: String
    package let brick: String

    /// Why GlusterFS cannot run here (nil when it can): the reason a test is skipped with.
    package static let unavailableReason: String? = {
        if geteuid() != 0 { return "GlusterFS tests need root (glusterd, mount -t glusterfs)" }
        if access("/dev/fuse", F_OK) != 0 { return "no /dev/fuse: FUSE cannot run here" }
        for tool in ["/usr/sbin/glusterd", "/usr/sbin/gluster", "/sbin/mount.glusterfs"] where access(tool, X_OK) != 0 {
            return "\(tool) is missing: apt-get install glusterfs-server glusterfs-client"
        }
        return nil
    }()

    private static let cli = "gluster --mode=script"
    /// One volume at a time in a test process; volumes of a killed test process are cleared first.
    private static let exclusive = NSRecursiveLock()
    private static let staleCleared: Void = clearStale()

    package static func with<T>(_ body: (GlusterVolume) throws -> T) throws -> T {
        try exclusive.withLock {
            _ = staleCleared
            // One glusterd serves every test process at once: each uses it under a shared lock,
            // and the last to leave stops the one the tests started (a second suite run beside
            // this one lost its daemon when the first stopped the glusterd it had started).
            let use = try DaemonUse.join()
            defer { use.leave() }
            try startDaemonIfNeeded()
            let scratch = TestSupport.scratchDirectory("gluster")
            defer { TestSupport.removeTree(scratch) }
            try "\(getpid())".write(toFile: scratch + "/owner", atomically: true, encoding: .utf8)
            let volume = GlusterVolume(name: "pvtest-\(getpid())-\(UInt32.random(in: 0...UInt32.max))",
                                       mountPoint: scratch + "/mnt", brick: scratch + "/brick")
            try FileManager.default.createDirectory(atPath: volume.mountPoint, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: volume.brick, withIntermediateDirectories: true)
            try "\(volume.name)".write(toFile: scratch + "/volume", atomically: true, encoding: .utf8)
            let host = ProcessInfo.processInfo.hostName
            try waitingForGlusterd("\(cli) volume create \(volume.name) \(host):\(volume.brick) force")
            defer { remove(volume.name) }
            try waitingForGlusterd("\(cli) volume start \(volume.name)")
            daemonizing("mount -t glusterfs \(host):/\(volume.name) \(volume.mountPoint)", log: scratch + "/mount.log")
            defer { _ = try? TestSupport.shell("umount \(volume.mountPoint) || umount -l \(volume.mountPoint)") }
            try waitFor("the GlusterFS mount at \(volume.mountPoint) (\(logText(scratch + "/mount.log")))", seconds: 30) {
                isFuse(volume.mountPoint)
            }
            return try body(volume)
        }
    }

    /// statfs(2) says FUSE (0x65735546): the mount is up, not the directory under it.
    private static func isFuse(_ path: String) -> Bool {
        var type: Int64 = 0, available: UInt64 = 0, total: UInt64 = 0
        return pv_statfs(path, &type, &available, &total) == 0 && type == 0x6573_5546
    }

    /// Starts `glusterd` when none runs and waits until it answers; the pid of one it started
    /// goes to `DaemonUse.startedByTests` (one already running without it is not ours to stop).
    private static func startDaemonIfNeeded() throws {
        if daemonPid() != nil {
            try waitFor("glusterd to answer", seconds: 30) { answers() }
            return
        }
        // A log of this start only: its own directory, made here (this may be the first test).
        let scratch = TestSupport.scratchDirectory("startofglusterd")
        defer { TestSupport.removeTree(scratch) }
        let log = scratch + "/glusterd.log"
        daemonizing("glusterd", log: log)
        try waitFor("glusterd to start (\(logText(log)))", seconds: 30) { daemonPid() != nil && answers() }
        if let pid = daemonPid() { try "\(pid)".write(toFile: DaemonUse.startedByTests, atomically: true, encoding: .utf8) }
    }

    /// A test process's use of glusterd: a shared `flock` on one file for every test process of
    /// the machine, held from before glusterd is looked for until the volume is gone.
    private struct DaemonUse {
        static let lockFile = "/tmp/provideo-tests/glusterd.lock"
        /// The pid of the glusterd a test process started; absent when the tests started none.
        static let startedByTests = "/tmp/provideo-tests/glusterd.pid"
        let fd: Int32

        /// Takes the shared lock, waiting up to 60 s while a leaving process stops glusterd.
        static func join() throws -> DaemonUse {
            try FileManager.default.createDirectory(atPath: "/tmp/provideo-tests", withIntermediateDirectories: true)
            let fd = open(lockFile, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw ProVideoError.system("open", errno: errno, path: lockFile) }
            do {
                try waitFor("the shared lock on \(lockFile)", seconds: 60) { flock(fd, LOCK_SH | LOCK_NB) == 0 }
            } catch {
                close(fd)
                throw error
            }
            return DaemonUse(fd: fd)
        }

        /// Lets go; the last user (the exclusive lock is free to take) stops the glusterd the
        /// tests started, with the brick processes it spawned.
        func leave() {
            defer { close(fd) }
            _ = flock(fd, LOCK_UN)
            guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { return }
            guard let text = try? String(contentsOfFile: Self.startedByTests, encoding: .utf8),
                  let pid = Int32(text), pid == daemonPid() else { return }
            stopDaemon(pid)
            unlink(Self.startedByTests)
        }
    }

    /// Runs a command that leaves a daemon behind (glusterd; the FUSE client of a mount) with
    /// its output in `log`, through system(3): the daemon must not inherit a pipe of the test
    /// (its reader would never see the end), and Foundation's `Process` was seen never to
    /// reap such a command's shell. Success is judged by what the command should have made
    /// (the caller waits for it), since Foundation may reap the shell first.
    private static func daemonizing(_ command: String, log: String) {
        _ = system("\(command) </dev/null >'\(log)' 2>&1")
    }

    private static func logText(_ log: String) -> String {
        ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private static func daemonPid() -> Int32? {
        (try? TestSupport.shell("pgrep -x glusterd"))?.split(separator: "\n").first.flatMap { Int32($0) }
    }

    private static func answers() -> Bool {
        (try? TestSupport.run("/bin/sh", ["-c", "\(cli) volume list"]))?.status == 0
    }

    /// Stops glusterd, and the brick processes it spawned.
    private static func stopDaemon(_ pid: Int32) {
        kill(pid, SIGTERM)
        for _ in 0..<100 where kill(pid, 0) == 0 { usleep(100_000) }
    }

    private static func waitFor(_ what: @autoclosure () -> String, seconds: Double, _ ready: () -> Bool) throws {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while !ready() {
            guard Date() < deadline else {
                throw ProVideoError(.ioError, "timed out after \(Int(seconds)) s waiting for \(what())")
            }
            usleep(200_000)
        }
    }

    /// Runs a gluster command, again while glusterd is busy with another transaction (another
    /// test process's volume; its lock is held for the length of one command), for up to 30 s.
    /// - Throws: the command's failure for any other reason, or its last one.
    private static func waitingForGlusterd(_ command: String) throws {
        let deadline = Date(timeIntervalSinceNow: 30)
        while true {
            let result = try TestSupport.run("/bin/sh", ["-c", command + " 2>&1"])
            guard result.status != 0 else { return }
            let busy = result.stdout.contains("Another transaction is in progress") || result.stdout.contains("Locking failed")
            guard busy, Date() < deadline else {
                throw ProVideoError(.ioError, "`\(command)` failed (status \(result.status)): \(result.stdout)")
            }
            usleep(500_000)
        }
    }

    /// Stops and deletes `name` until glusterd no longer knows it, for up to 30 s: glusterd
    /// refuses a command while another transaction holds its lock ("Another transaction is in
    /// progress"), and a delete whose failure was ignored left volumes behind whose scratch
    /// directory was gone.
    private static func remove(_ name: String) {
        let deadline = Date(timeIntervalSinceNow: 30)
        while (try? TestSupport.run("/bin/sh", ["-c", "\(cli) volume info \(name) >/dev/null 2>&1"]))?.status == 0,
              Date() < deadline {
            _ = try? TestSupport.run("/bin/sh", ["-c", "\(cli) volume stop \(name) force; \(cli) volume delete \(name)"])
            usleep(200_000)
        }
    }

    /// Unmounts, stops and deletes the volumes of test processes that are gone: those with a
    /// scratch directory, then any `pvtest-<pid>-…` volume glusterd still knows whose process is gone.
    private static func clearStale() {
        defer {
            let volumes = answers() ? ((try? TestSupport.shell("\(cli) volume list")) ?? "") : ""
            for name in volumes.split(separator: "\n").map(String.init) where name.hasPrefix("pvtest-") {
                guard let pid = name.split(separator: "-").dropFirst().first.flatMap({ Int32($0) }),
                      pid != getpid(), kill(pid, 0) != 0 else { continue }
                remove(name)
            }
        }
        let base = "/tmp/provideo-tests"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? [] where name.hasPrefix("gluster") {
            let scratch = "\(base)/\(name)"
            let owner = (try? String(contentsOfFile: scratch + "/owner", encoding: .utf8)).flatMap { Int32($0) }
            if let owner, owner == getpid() || kill(owner, 0) == 0 { continue }
            _ = try? TestSupport.shell("umount -l \(scratch)/mnt 2>/dev/null; true")
            if let volume = try? String(contentsOfFile: scratch + "/volume", encoding: .utf8), answers() {
                remove(volume)
            }
            TestSupport.removeLeftover(scratch)
        }
    }
}

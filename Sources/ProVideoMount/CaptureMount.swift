import CProVideoMount
import Foundation
import Glibc
import ProVideoStorage

/// `provideo mount`: the pool as a directory any program records into (Docs/CAPTURE-MOUNT.md).
/// The mount shows the destination directory; a file created in it is a capture whose
/// recording lands at the same relative path in the destination directory. Everything else
/// (reading, listing, renaming, removing existing files and directories) passes through to
/// the destination directory, acting as the requesting user.
public final class CaptureMount: @unchecked Sendable {
    public struct Options: Sendable {
        /// The directory the mount shows and its recordings land in.
        public var destination: String
        /// Options of every capture the mount starts (bitrate, landing, overrun policy).
        public var capture: CaptureOptions
        /// Lets every user use the mount (FUSE `allow_other`, which needs `user_allow_other`
        /// in /etc/fuse.conf unless run as root); each request then acts as its user.
        public var allowOther: Bool
        /// Stays in the foreground instead of becoming a daemon once mounted.
        public var foreground: Bool
        /// Writes each event (a take landed, a capture failed, an open refused) as one JSON
        /// object per line on standard output instead of logging it; implies `foreground`.
        public var json: Bool

        public init(destination: String, capture: CaptureOptions, allowOther: Bool = false, foreground: Bool = false,
                    json: Bool = false) {
            self.destination = destination
            self.capture = capture
            self.allowOther = allowOther
            self.foreground = foreground || json
            self.json = json
        }
    }

    let pool: Pool
    let options: Options
    /// `PROVIDEO_MOUNT_DEBUG=slow`: log each write request the daemon took over 20 ms on.
    let debug = ProcessInfo.processInfo.environment["PROVIDEO_MOUNT_DEBUG"] == "slow"
    /// The destination directory, opened once: every request uses it with `*at` calls.
    let directory: Int32
    let destinationPath: String

    private let lock = NSLock()
    private let reportLock = NSLock()
    /// Files being captured, by their name in the mount (relative to the destination).
    private var captures: [String: MountedCapture] = [:]
    /// Names whose capture is starting (outside `lock`: a start takes tens of milliseconds).
    private var starting: Set<String> = []
    private var handles: [UInt64: Handle] = [:]
    private var nextHandle: UInt64 = 1

    enum Handle {
        /// A descriptor of a file being captured; `writing` when opened for writing.
        case capture(MountedCapture, writing: Bool)
        /// A file of the destination directory, open as its user.
        case file(Int32)
    }

    /// - Throws: `.invalidDestination` when the destination is not a directory;
    ///   `.permissionDenied` for `allowOther` without root (each request must act as its user).
    public init(pool: Pool, options: Options) throws {
        if options.allowOther && geteuid() != 0 {
            throw ProVideoError(.permissionDenied, "--allow-other needs root: the mount then acts as each user; without "
                                + "it, every member of the pool's group mounts their own")
        }
        self.pool = pool
        self.options = options
        destinationPath = URL(fileURLWithPath: options.destination).standardizedFileURL.path
        directory = open(destinationPath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directory >= 0 else {
            throw ProVideoError(.invalidDestination, "the destination \(destinationPath) is not a directory that can be "
                                + "opened (\(String(cString: strerror(errno)))); create it first", errno: errno,
                                path: destinationPath)
        }
    }

    deinit { close(directory) }

    /// Mounts at `mountpoint` and serves requests until it is unmounted (`fusermount3 -u`,
    /// `umount`) or the process gets SIGINT/SIGTERM/SIGHUP; open captures are then finished.
    /// - Returns: fuse_main(3)'s status: 0 once unmounted.
    public func run(at mountpoint: String) -> Int32 {
        var mountOptions = "fsname=provideo,subtype=provideo,default_permissions,max_threads=16"
        if options.allowOther { mountOptions += ",allow_other" }
        var arguments = ["provideo", mountpoint, "-o", mountOptions]
        if options.foreground { arguments.append("-f") }
        // libfuse's own trace of every request, for a bug report.
        if ProcessInfo.processInfo.environment["PROVIDEO_MOUNT_DEBUG"] == "1" { arguments.append("-d") }
        CaptureMount.current = self
        var operations = MountOperations.table()
        var argv = arguments.map { strdup($0) }
        defer { argv.forEach { free($0) } }
        let status = argv.withUnsafeMutableBufferPointer { buffer in
            pv_fuse_main(Int32(buffer.count), buffer.baseAddress, &operations, nil)
        }
        finishAll()
        return status
    }

    /// The mount this process serves (one per process: libfuse's callbacks are C functions).
    nonisolated(unsafe) static var current: CaptureMount!

    // MARK: Identity and paths

    /// Runs `body` as the requesting user when the mount serves others (root acting for them).
    func asRequester<T>(_ body: () throws -> T) throws -> T {
        let uid = pv_fuse_uid(), gid = pv_fuse_gid()
        guard geteuid() == 0, uid != 0 else { return try body() }
        return try ThreadIdentity.acting(as: uid, gid, body)
    }

    /// The name under the destination directory for a FUSE path ("/a/b.mov" → "a/b.mov").
    static func relative(_ path: UnsafePointer<CChar>?) -> String {
        let text = path.map { String(cString: $0) } ?? "/"
        let trimmed = String(text.drop(while: { $0 == "/" }))
        return trimmed.isEmpty ? "." : trimmed
    }

    /// The errno of a failed system call, negated, as FUSE answers.
    static func failed(_ rc: Int) -> Int32 { rc < 0 ? -Glibc.errno : Int32(rc) }

    // MARK: Captures and handles

    func capture(named name: String) -> MountedCapture? { lock.withLock { captures[name] } }

    func captures(in directory: String) -> [MountedCapture] {
        lock.withLock {
            captures.values.filter { (($0.name as NSString).deletingLastPathComponent.isEmpty ? "." : ($0.name as NSString).deletingLastPathComponent) == directory }
        }
    }

    func add(_ handle: Handle) -> UInt64 {
        lock.withLock {
            let number = nextHandle
            nextHandle += 1
            handles[number] = handle
            return number
        }
    }

    func handle(_ number: UInt64) -> Handle? { lock.withLock { handles[number] } }

    func removeHandle(_ number: UInt64) -> Handle? { lock.withLock { handles.removeValue(forKey: number) } }

    /// Starts a capture for `name`, as the requesting user, with the mode it asked for.
    func startCapture(_ name: String, mode: mode_t) throws -> MountedCapture {
        let uid = pv_fuse_uid(), gid = pv_fuse_gid()
        try lock.withLock {
            guard captures[name] == nil, !starting.contains(name) else {
                throw ProVideoError(.destinationExists, "\(name) is being recorded already")
            }
            starting.insert(name)
        }
        defer { lock.withLock { _ = starting.remove(name) } }
        // Root serving another user records for that user: only a member of the pool's group
        // may (as without the mount), and the capture, then the recording, is theirs.
        let forUser = geteuid() == 0 && uid != 0
        if forUser {
            try asRequester {
                guard faccessat(AT_FDCWD, pool.path, R_OK | W_OK | X_OK, AT_EACCESS) == 0 else {
                    throw ProVideoError(.permissionDenied, "user \(uid) may not use the pool at \(pool.path): "
                                        + "not a member of its group", errno: Glibc.errno, path: pool.path)
                }
                // The destination directory must be the user's to write, as for their own recorder.
                let parent = (name as NSString).deletingLastPathComponent
                guard faccessat(directory, parent.isEmpty ? "." : parent, W_OK | X_OK, AT_EACCESS) == 0 else {
                    throw ProVideoError(.permissionDenied, "user \(uid) may not write in \(parent.isEmpty ? "." : parent)",
                                        errno: Glibc.errno, path: destinationPath)
                }
            }
        }
        let capture = try pool.startCapture(to: destinationPath + "/" + name, options: options.capture,
                                            owner: forUser ? uid : nil)
        let mounted = MountedCapture(capture: capture, destination: name, uid: uid, gid: gid, mode: mode)
        lock.withLock { captures[name] = mounted }
        return mounted
    }

    /// Whether a capture runs under directory `name` (its removal or rename would strand it).
    func capturesBelow(_ name: String) -> Bool {
        lock.withLock { captures.keys.contains { $0.hasPrefix(name + "/") } || starting.contains { $0.hasPrefix(name + "/") } }
    }

    /// Renames a file being captured: its recording lands under the new name.
    /// - Returns: false when `from` is not being captured (or has finished: the rename is then
    ///   the landed file's).
    func renameCapture(_ from: String, to: String) throws -> Bool {
        guard let mounted = capture(named: from) else { return false }
        guard mounted.current == .open else {
            mounted.waitUntilEnded()
            return false
        }
        // A rename onto a file replaces it, as rename(2) does once the take has landed: the
        // outcome does not depend on whether the close came first (issue 39, D3). The landing
        // replaces only a file that was there at the rename, never one made after it.
        var taken = stat()
        let replacing = fstatat(directory, to, &taken, AT_SYMLINK_NOFOLLOW) == 0
        if replacing && taken.st_mode & S_IFMT == S_IFDIR {
            throw ProVideoError(.invalidDestination, "\(to) is a directory", errno: EISDIR)
        }
        return try mounted.lock.withLock {
            guard mounted.current == .open else { return false }
            try lock.withLock {
                guard captures[to] == nil, !starting.contains(to) else {
                    throw ProVideoError(.destinationExists, "\(to) is being recorded")
                }
                captures[from] = nil
                captures[to] = mounted
                mounted.name = to
                mounted.replacing = replacing
            }
            return true
        }
    }

    /// Finishes a capture whose last writer closed, on a thread of its own so that no FUSE
    /// thread waits for a landing: the recording lands (as `--land` says) and, when it was
    /// renamed meanwhile, takes its new name and the mode its writer asked for.
    func finishInBackground(_ mounted: MountedCapture) {
        guard mounted.move(from: .open, to: .finishing) else { return }
        let thread = Thread { [self] in finish(mounted) }
        thread.name = "provideo-mount-finish"
        thread.start()
    }

    private func finish(_ mounted: MountedCapture) {
        mounted.lock.withLock {
            let started = Date()
            do {
                let result = try mounted.capture.finish()
                var landed = result.path
                if result.landingTo == nil {
                    if mounted.name != mounted.destination {
                        let rc = try? ThreadIdentity.acting(as: mounted.uid, mounted.gid) {
                            pv_rename(directory, mounted.destination, mounted.name, mounted.replacing ? 0 : 1)
                        }
                        if rc == 0 { landed = destinationPath + "/" + mounted.name } else {
                            let why = rc.map { String(cString: strerror(-$0)) } ?? "no identity"
                            report(MountEvent(.renameFailed, name: mounted.name, message: "\(mounted.destination) landed, "
                                              + "but could not be renamed to \(mounted.name): \(why)", path: result.path))
                        }
                    }
                    let named = landed == result.path ? mounted.destination : mounted.name
                    // The mode the writer asked for; a failure is said (the take landed with the
                    // library's mode), never dropped.
                    let chmod = try? ThreadIdentity.acting(as: mounted.uid, mounted.gid) {
                        fchmodat(directory, named, mounted.mode, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : -errno
                    }
                    if chmod != 0 {
                        let why = chmod.map { String(cString: strerror(-$0)) } ?? "no identity"
                        report(MountEvent(.modeNotSet, name: mounted.name, message: "\(landed) landed, but its mode "
                                          + "could not be set to \(String(mounted.mode, radix: 8)): \(why)", path: landed))
                    }
                } else if mounted.name != mounted.destination {
                    report(MountEvent(.landsUnderFirstName, name: mounted.name, message: "\(mounted.destination) lands in "
                                      + "the background under its first name, not \(mounted.name)", path: result.path))
                }
                let seconds = Date().timeIntervalSince(started)
                report(MountEvent(.landed, name: mounted.name, message: "\(landed): \(result.length) bytes"
                                  + "\(result.landingTo.map { ", landing to \($0) in the background" } ?? ""), "
                                  + "finished in \(String(format: "%.3f", seconds)) s",
                                  path: landed, bytes: result.length, landingTo: result.landingTo, seconds: seconds))
            } catch {
                // What happened, without the recovery it names: the mount salvages right away.
                let what = (error as? ProVideoError)?.message ?? "\(error)"
                report(MountEvent(.failed, name: mounted.name, message: "\(mounted.name): \(what)", error: error))
                // A failed capture let go of the pool: its committed part is placed now, as its
                // owner, rather than at the next start or `provideo recover`.
                do {
                    for salvaged in try Pool.salvage(at: pool.path).salvaged {
                        report(MountEvent(.salvaged, name: mounted.name, message: "salvaged \(salvaged.path): "
                                          + "\(salvaged.length) bytes", path: salvaged.path, bytes: salvaged.length))
                    }
                } catch {
                    report(MountEvent(.notSalvaged, name: mounted.name, message: "\(mounted.name): not salvaged now "
                                      + "(`provideo recover` places it): \(error)", error: error))
                }
            }
            lock.withLock { if captures[mounted.name] === mounted { captures[mounted.name] = nil } }
            _ = mounted.move(from: .finishing, to: .ended)
        }
    }

    /// Cancels a capture whose file was removed.
    /// - Returns: false when it was finishing or had finished (after waiting for it): the file
    ///   to remove is then the landed one.
    func cancel(_ mounted: MountedCapture) throws -> Bool {
        guard mounted.move(from: .open, to: .ended) else {
            mounted.waitUntilEnded()
            return false
        }
        lock.withLock { if captures[mounted.name] === mounted { captures[mounted.name] = nil } }
        try mounted.lock.withLock { try mounted.capture.cancel() }
        return true
    }

    /// Finishes every capture still open and waits for every finish (the mount is going away).
    func finishAll() {
        let all = lock.withLock { Array(captures.values) }
        for mounted in all { finishInBackground(mounted) }
        for mounted in all { mounted.waitUntilEnded() }
    }

    /// Reports an event: with `json`, one JSON object per line on stdout; otherwise one line of
    /// the daemon's log, on stderr in the foreground, else to syslog (the journal).
    func report(_ event: MountEvent) {
        if options.json {
            // One write per line, never two threads' lines interleaved.
            reportLock.withLock { FileHandle.standardOutput.write(Data((event.jsonLine + "\n").utf8)) }
        } else if options.foreground {
            FileHandle.standardError.write(Data("provideo mount: \(event.message)\n".utf8))
        } else {
            pv_syslog(event.message)
        }
    }
}

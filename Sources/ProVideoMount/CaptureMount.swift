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

        public init(destination: String, capture: CaptureOptions, allowOther: Bool = false, foreground: Bool = false) {
            self.destination = destination
            self.capture = capture
            self.allowOther = allowOther
            self.foreground = foreground
        }
    }

    let pool: Pool
    let options: Options
    /// The destination directory, opened once: every request uses it with `*at` calls.
    let directory: Int32
    let destinationPath: String

    private let lock = NSLock()
    /// Files being captured, by their name in the mount (relative to the destination).
    private var captures: [String: MountedCapture] = [:]
    private var handles: [UInt64: Handle] = [:]
    private var nextHandle: UInt64 = 1

    enum Handle {
        case capture(MountedCapture)
        /// A file of the destination directory, open as its user.
        case file(Int32)
    }

    /// - Throws: `.invalidDestination` when the destination is not a directory.
    public init(pool: Pool, options: Options) throws {
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

    /// Starts a capture for `name`, as the requesting user.
    func startCapture(_ name: String) throws -> MountedCapture {
        let uid = pv_fuse_uid(), gid = pv_fuse_gid()
        return try lock.withLock {
            guard captures[name] == nil else {
                throw ProVideoError(.destinationExists, "\(name) is being recorded already")
            }
            // Root serving another user records for that user: only a member of the pool's
            // group may (as without the mount), and the capture, then the recording, is theirs.
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
            let mounted = MountedCapture(capture: capture, destination: name, uid: uid, gid: gid)
            captures[name] = mounted
            return mounted
        }
    }

    /// Renames a file being captured: its recording lands under the new name.
    /// - Returns: false when `from` is not being captured.
    func renameCapture(_ from: String, to: String) throws -> Bool {
        guard let mounted = capture(named: from) else { return false }
        try mounted.lock.withLock {
            guard !mounted.ended else { throw ProVideoError(.captureClosed, "\(from) is finished") }
            try lock.withLock {
                guard captures[to] == nil else { throw ProVideoError(.destinationExists, "\(to) is being recorded") }
                var facts = stat()
                guard fstatat(directory, to, &facts, AT_SYMLINK_NOFOLLOW) != 0 else {
                    throw ProVideoError(.destinationExists, "\(to) exists", errno: EEXIST)
                }
                captures[from] = nil
                captures[to] = mounted
                mounted.name = to
            }
        }
        return true
    }

    /// Finishes a capture whose last descriptor closed: the recording lands (as `--land`
    /// says) and, when it was renamed meanwhile, takes its new name.
    func finish(_ mounted: MountedCapture) {
        mounted.lock.withLock {
            guard !mounted.ended else { return }
            mounted.ended = true
            let started = Date()
            do {
                let result = try mounted.capture.finish()
                var landed = result.path
                if mounted.name != mounted.destination && result.landingTo == nil {
                    let rc = try? ThreadIdentity.acting(as: mounted.uid, mounted.gid) {
                        renameat2Shim(from: mounted.destination, to: mounted.name)
                    }
                    if rc == 0 { landed = destinationPath + "/" + mounted.name }
                    else { log("\(mounted.destination) landed, but could not be renamed to \(mounted.name): \(rc.map { String(cString: strerror(-$0)) } ?? "no identity")") }
                }
                log("\(landed): \(result.length) bytes\(result.landingTo.map { ", landing to \($0) in the background" } ?? ""), finished in \(String(format: "%.3f", Date().timeIntervalSince(started))) s")
            } catch {
                log("\(mounted.name): \(error)")
            }
            lock.withLock { if captures[mounted.name] === mounted { captures[mounted.name] = nil } }
        }
    }

    /// Cancels a capture whose file was removed.
    func cancel(_ mounted: MountedCapture) throws {
        try mounted.lock.withLock {
            guard !mounted.ended else { return }
            mounted.ended = true
            lock.withLock { captures[mounted.name] = nil }
            try mounted.capture.cancel()
        }
    }

    private func renameat2Shim(from: String, to: String) -> Int32 { pv_rename(directory, from, to, 1) }

    /// Finishes every capture still open (the mount is going away).
    func finishAll() {
        for mounted in lock.withLock({ Array(captures.values) }) { finish(mounted) }
    }

    func log(_ line: String) {
        FileHandle.standardError.write(Data("provideo mount: \(line)\n".utf8))
    }
}

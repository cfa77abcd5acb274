import Foundation
import Glibc
import ProVideoStorage
import Testing

/// Shared helpers for the tests: scratch directories, running the built tools as separate
/// processes, and loop-mounted filesystems (root only).
package enum TestSupport {
    /// The path `fd` refers to.
    package static func path(of fd: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1)
        return n > 0 ? String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
    }

    package static var isRoot: Bool { geteuid() == 0 }

    /// `path` as the library hands it to the system-call seam, made readable: the library names
    /// a file in a directory it resolved once as `/proc/self/fd/N/NAME` (`DirectoryHandle`);
    /// this gives the directory's path in its place.
    package static func resolved(_ path: String) -> String {
        let prefix = "/proc/self/fd/"
        guard path.hasPrefix(prefix) else { return path }
        let rest = path.dropFirst(prefix.count)
        let number = rest.prefix { $0.isNumber }
        guard let fd = Int32(number) else { return path }
        let directory = Self.path(of: fd)
        return directory + rest.dropFirst(number.count)
    }

    /// Whether `path` is a capture's data file in a pool (`captures/<id>/data`).
    package static func isCaptureData(_ path: String) -> Bool {
        path.hasSuffix("/data") && FileSystemPath.parent(FileSystemPath.parent(path)).hasSuffix("/captures")
    }

    /// The directory of the pool's capture (`captures/<id>`; the first when several run), ""
    /// when there is none.
    package static func onlyCapture(_ pool: String) -> String {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: pool + "/captures")) ?? []).sorted()
        return names.first.map { pool + "/captures/" + $0 } ?? ""
    }

    /// Whether any capture's files are in the pool.
    package static func hasCapture(_ pool: String) -> Bool {
        !onlyCapture(pool).isEmpty || FileManager.default.fileExists(atPath: pool + "/capture")
    }

    /// A fresh directory under /tmp/provideo-tests; remove it with `removeTree`.
    package static func scratchDirectory(_ name: String = #function) -> String {
        let base = "/tmp/provideo-tests"
        try? FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        let clean = name.filter { $0.isLetter || $0.isNumber }.prefix(40)
        var template = Array("\(base)/\(clean)-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { fatalError("mkdtemp failed: \(errno)") }
        return String(cString: made)
    }

    /// Runs `body` with a fresh directory on /dev/shm (tmpfs: another filesystem than the
    /// scratch directories', writable without root), removed afterwards, even when `body` throws.
    package static func withScratchOnAnotherFilesystem<T>(_ body: (String) throws -> T) throws -> T {
        var template = Array("/dev/shm/provideo-tests-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw ProVideoError(.ioError, "mkdtemp in /dev/shm failed (errno \(errno))")
        }
        let directory = String(cString: made)
        defer { removeTree(directory) }
        return try body(directory)
    }

    /// Removes a test's own scratch tree; a tree that stays is an issue of the test that made it
    /// (a process of the test still writing, a mount left behind), not a leftover for later tests.
    package static func removeTree(_ path: String, fileID: String = #fileID, filePath: String = #filePath,
                                   line: Int = #line, column: Int = #column) {
        do {
            try FileManager.default.removeItem(atPath: path)
        } catch {
            var facts = stat()
            guard lstat(path, &facts) == 0 else { return }
            Issue.record("scratch \(path) was not removed: \(error)",
                         sourceLocation: SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column))
        }
    }

    /// Removes what a test process that has ended left behind, which a later process may find
    /// still busy (a lazily unmounted filesystem); the next sweep tries again.
    package static func removeLeftover(_ path: String) {
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Runs `body` with a scratch directory that is removed afterwards, even when `body` throws.
    package static func withScratch<T>(_ name: String = #function, _ body: (String) throws -> T) rethrows -> T {
        let directory = scratchDirectory(name)
        defer { removeTree(directory) }
        return try body(directory)
    }

    /// The directory holding the built products (`provideo`, `provideo-bench`).
    package static var productsDirectory: String {
        var url = Bundle.main.bundleURL
        while url.pathComponents.count > 1 && !FileManager.default.fileExists(atPath: url.appendingPathComponent("provideo").path) {
            url.deleteLastPathComponent()
        }
        return url.path
    }

    package struct ProcessResult {
        package var status: Int32
        package var stdout: String
        package var stderr: String
    }

    /// Runs a built tool (`provideo`, `provideo-bench`) or any absolute executable to its end.
    @discardableResult
    package static func run(_ tool: String, _ arguments: [String], stdin: Data? = nil,
                    environment: [String: String] = [:]) throws -> ProcessResult {
        let process = try start(tool, arguments, environment: environment, stdinPipe: stdin != nil)
        if let stdin, let pipe = process.standardInput as? Pipe {
            // EPIPE: the tool stopped reading (it refused the input); its exit status says why.
            try? pipe.fileHandleForWriting.write(contentsOf: stdin)
            try? pipe.fileHandleForWriting.close()
        }
        let out = (process.standardOutput as! Pipe).fileHandleForReading
        let err = (process.standardError as! Pipe).fileHandleForReading
        final class Box: @unchecked Sendable { var data = Data() }
        let errorData = Box()
        let group = DispatchGroup()
        group.enter()
        DispatchQueue.global().async { errorData.data = err.readDataToEndOfFile(); group.leave() }
        let outputData = out.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        // Closed here, not when Foundation frees the `Process` (later, from its own thread).
        try? out.close()
        try? err.close()
        return ProcessResult(status: process.terminationStatus, stdout: String(decoding: outputData, as: UTF8.self),
                             stderr: String(decoding: errorData.data, as: UTF8.self))
    }

    /// Starts a tool with piped standard output and error (and input when `stdinPipe`). The
    /// caller ends it with `wait(_:)` or `waitUntilExit()`, never by `isRunning` alone:
    /// a `Process` not waited for keeps its pipes open in this process.
    package static func start(_ tool: String, _ arguments: [String], environment: [String: String] = [:],
                      stdinPipe: Bool = false) throws -> Process {
        // A tool that refuses its input and exits early must fail the test, not kill it with
        // SIGPIPE when the test writes the rest of that input.
        signal(SIGPIPE, SIG_IGN)
        try requireFewOpenDescriptors()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool.hasPrefix("/") ? tool : productsDirectory + "/" + tool)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "PROVIDEO_POOL")
        env.removeValue(forKey: "PROVIDEO_CRASH_AT")
        for (key, value) in environment { env[key] = value }
        process.environment = env
        process.standardOutput = Pipe()
        process.standardError = Pipe()
        if stdinPipe { process.standardInput = Pipe() }
        try process.run()
        return process
    }

    /// The most descriptors this process may hold when it starts a child. Foundation's
    /// `Process.run()` reads /proc/self/fd with a 256-byte copy of each entry's name, past the
    /// end of glibc's 32 KiB readdir buffer once that buffer fills (about 1,360 entries of 24
    /// bytes): the test process dies of SIGSEGV at random (swift-corelibs-foundation PR #5472,
    /// seen in CI with 1,361 descriptors open). The suite's own need peaks near 250.
    package static let descriptorCeiling = 1_000

    /// Fails the test that would start a child while the process holds more than
    /// `descriptorCeiling` descriptors: a leak, named here, instead of a crash later.
    package static func requireFewOpenDescriptors() throws {
        let open = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count
        guard open <= descriptorCeiling else {
            throw ProVideoError(.ioError, "the test process holds \(open) descriptors, more than \(descriptorCeiling): "
                                + "a child not waited for leaks its pipes (TestSupport.start); Foundation's Process.run "
                                + "crashes past about 1,360")
        }
    }

    /// Runs a shell command as a helper step (mkfs, mount); throws when it fails.
    @discardableResult
    package static func shell(_ command: String) throws -> String {
        let result = try run("/bin/sh", ["-c", command])
        guard result.status == 0 else {
            throw ProVideoError(.ioError, "`\(command)` failed (\(result.status)): \(result.stderr)")
        }
        return result.stdout
    }

    /// Deterministic bytes for content checks.
    package static func pattern(_ count: Int, seed: UInt64) -> [UInt8] {
        var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { raw in
            var offset = 0
            while offset < count {
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                withUnsafeBytes(of: state) { word in
                    let n = min(8, count - offset)
                    raw.baseAddress!.advanced(by: offset).copyMemory(from: word.baseAddress!, byteCount: n)
                }
                offset += 8
            }
        }
        return bytes
    }

    /// Whether the file at `path` holds exactly `bytes`. A Bool, so a failing `#expect` does
    /// not ask Swift Testing to diff megabytes of bytes (that takes hours).
    package static func fileHolds(_ path: String, _ bytes: [UInt8]) -> Bool {
        readFile(path) == bytes
    }

    package static func readFile(_ path: String) -> [UInt8] {
        // FileManager spins on "" (seen as a test that never ended): no path, no bytes.
        guard !path.isEmpty else { return [] }
        return Array(FileManager.default.contents(atPath: path) ?? Data())
    }

    /// The first `count` bytes of a file (fewer if it is shorter), read from the disk as a
    /// crash would leave them (an O_DIRECT write leaves no page cached).
    package static func readPrefix(_ path: String, _ count: Int) -> [UInt8] {
        guard let handle = FileHandle(forReadingAtPath: path) else { return [] }
        defer { try? handle.close() }
        return Array((try? handle.read(upToCount: count)) ?? Data())
    }
}

/// A filesystem image on a loop device, mounted under a scratch directory (root only).
/// `LoopFilesystem.with` unmounts, detaches and deletes it even when the body throws.
package struct LoopFilesystem {
    package let type: String
    package let mountPoint: String
    package let device: String

    /// - Parameters:
    ///   - type: "ext4", "xfs", "btrfs", "tmpfs" (tmpfs needs no device) or `ExchangeXFS.type`
    ///     (XFS with exchange-range; check `ExchangeXFS.isAvailable` first).
    ///   - megabytes: the image size.
    ///   - sectorSize: the loop device's logical sector size (512 or 4096).
    ///   - mkfsOptions: added to the mkfs command (`-m 0 -N 64` for ext4, say).
    package static func with<T>(_ type: String, megabytes: Int = 320, sectorSize: Int = 512, mkfsOptions: String = "",
                        _ body: (LoopFilesystem) throws -> T) throws -> T {
        // One loop filesystem test at a time across every test module (each module's root
        // suite is serialized only within itself): their mkfs and mounts load the shared disk and
        // the 2 CPUs, and the timing bounds of the crash tests running beside them assume that.
        try exclusive.withLock {
            _ = staleCleared
            return try withUngated(type, megabytes: megabytes, sectorSize: sectorSize, mkfsOptions: mkfsOptions, body)
        }
    }

    /// Loop filesystems a killed test process left (its defers never ran) are unmounted,
    /// detached and deleted before this process makes its first one.
    private static let staleCleared: Void = clearStale()

    /// Clears every `/tmp/provideo-tests/loop-*` directory whose owning process (its `owner`
    /// file) is gone, or that has no owner file.
    private static func clearStale() {
        let base = "/tmp/provideo-tests"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []
        for name in names where name.hasPrefix("loop") {
            let scratch = "\(base)/\(name)"
            let owner = (try? String(contentsOfFile: scratch + "/owner", encoding: .utf8)).flatMap { Int32($0) }
            if let owner, owner == getpid() || kill(owner, 0) == 0 { continue }
            _ = try? TestSupport.shell("umount -l \(scratch)/mnt 2>/dev/null; "
                                       + "for d in $(losetup -j \(scratch)/image -O NAME -n); do losetup -d $d; done; true")
            TestSupport.removeLeftover(scratch)
        }
    }

    /// Held while a loop filesystem exists; recursive, as a test may mount a second one.
    private static let exclusive = NSRecursiveLock()

    /// Runs `body` alone among the loop-filesystem tests, for a test whose tool sets up its own
    /// loop devices and mounts (the power-loss harness, Tools/powerloss).
    package static func exclusively<T>(_ body: () throws -> T) throws -> T {
        try exclusive.withLock { try body() }
    }

    private static func withUngated<T>(_ type: String, megabytes: Int, sectorSize: Int, mkfsOptions: String,
                                       _ body: (LoopFilesystem) throws -> T) throws -> T {
        let scratch = TestSupport.scratchDirectory("loop-\(type)")
        let mountPoint = scratch + "/mnt"
        defer { TestSupport.removeTree(scratch) }
        try "\(getpid())".write(toFile: scratch + "/owner", atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        if type == "tmpfs" {
            try TestSupport.shell("mount -t tmpfs -o size=\(megabytes)m tmpfs \(mountPoint)")
            defer { _ = try? TestSupport.shell("umount -l \(mountPoint)") }
            return try body(LoopFilesystem(type: type, mountPoint: mountPoint, device: "tmpfs"))
        }
        let image = scratch + "/image"
        try TestSupport.shell("truncate -s \(megabytes)M \(image)")
        let device = try TestSupport.shell("losetup --find --show --sector-size \(sectorSize) \(image)")
            .trimmingCharacters(in: .whitespacesAndNewlines)
        defer { _ = try? TestSupport.shell("losetup -d \(device)") }
        let mkfs: String
        switch type {
        case "xfs": mkfs = "mkfs.xfs -q -f -m reflink=1"
        case ExchangeXFS.type: mkfs = try ExchangeXFS.mkfsCommand()
        case "btrfs": mkfs = "mkfs.btrfs -q -f"
        default: mkfs = "mkfs.ext4 -q -F"
        }
        try TestSupport.shell("\(mkfs) \(mkfsOptions) \(device)")
        try TestSupport.shell("mount \(device) \(mountPoint)")
        defer { _ = try? TestSupport.shell("umount \(mountPoint) || umount -l \(mountPoint)") }
        return try body(LoopFilesystem(type: type, mountPoint: mountPoint, device: device))
    }
}

// MARK: - Filesystem and fault test helpers (added for the Filesystem* / Fault* tests)

import CProVideo

extension TestSupport {
    /// The built `provideo`, as an absolute path (for shell pipelines).
    package static var provideoPath: String { productsDirectory + "/provideo" }

    /// `provideo --pool POOL status --json`, decoded. Throws when the command fails.
    package static func poolStatus(_ pool: String) throws -> PoolStatus {
        let result = try run("provideo", ["--pool", pool, "status", "--json"])
        guard result.status == 0 else {
            throw ProVideoError(.ioError, "provideo status failed (\(result.status)): \(result.stderr)")
        }
        return try JSONDecoder().decode(PoolStatus.self, from: Data(result.stdout.utf8))
    }

    /// `provideo --pool POOL list --json`, decoded.
    package static func poolListing(_ pool: String) throws -> PoolListing {
        let result = try run("provideo", ["--pool", pool, "list", "--json"])
        guard result.status == 0 else {
            throw ProVideoError(.ioError, "provideo list failed (\(result.status)): \(result.stderr)")
        }
        return try JSONDecoder().decode(PoolListing.self, from: Data(result.stdout.utf8))
    }

    /// Size and allocated bytes of a file as coreutils `stat -c '%s %b %B'` reports them
    /// (allocated = %b * %B), independent of the library's own statx.
    package static func statSizes(_ path: String) throws -> (size: Int64, allocated: Int64) {
        let fields = try shell("stat -c '%s %b %B' '\(path)'").split(whereSeparator: \.isWhitespace).compactMap { Int64($0) }
        guard fields.count == 3 else { throw ProVideoError(.ioError, "cannot parse stat output for \(path)") }
        return (fields[0], fields[1] * fields[2])
    }

    /// statvfs(3) of the filesystem holding `path`: free bytes (f_bfree), free bytes for
    /// unprivileged users (f_bavail, what `df` shows as Avail) and the block size.
    package struct FreeSpace: Equatable, CustomStringConvertible {
        package var free: Int64
        package var available: Int64
        package var blockSize: Int64
        package var description: String { "free \(free), available \(available), block \(blockSize)" }
    }

    package static func freeSpace(_ path: String) throws -> FreeSpace {
        var s = statvfs()
        guard statvfs(path, &s) == 0 else { throw ProVideoError(.ioError, "statvfs \(path): \(errno)") }
        let unit = Int64(s.f_frsize)
        return FreeSpace(free: Int64(s.f_bfree) * unit, available: Int64(s.f_bavail) * unit, blockSize: Int64(s.f_bsize))
    }

    /// The attribute letters `lsattr` prints for a file (e.g. "---------------C------").
    package static func lsattrFlags(_ path: String) throws -> String {
        String(try shell("lsattr '\(path)'").split(separator: " ").first ?? "")
    }

    /// `n` rounded up to a multiple of `unit`.
    package static func roundUp(_ n: Int64, _ unit: Int64) -> Int64 { (n + unit - 1) / unit * unit }

    /// SHA-256 of `bytes` in hex (libcrypto through the C shim).
    package static func sha256Hex(_ bytes: [UInt8]) -> String {
        let context = pv_sha256_new()
        bytes.withUnsafeBytes { pv_sha256_update(context, $0.baseAddress, $0.count) }
        var digest = [UInt8](repeating: 0, count: 32)
        pv_sha256_finish(context, &digest)
        return digest.map { String(format: "%02x", $0) }.joined()
    }

    /// SHA-256 of a file in hex, computed by coreutils `sha256sum`.
    package static func sha256sum(_ path: String) throws -> String {
        String(try shell("sha256sum '\(path)'").prefix(64))
    }

    /// A file name no other test, test process or run shares: `prefix`, this process's ID and
    /// a random part (issue 38: two tests of one process landed at one `/dev/shm` name, and the
    /// second found the first's take there).
    package static func uniqueName(_ prefix: String, suffix: String = "") -> String {
        "\(prefix)-\(getpid())-\(UInt64.random(in: 0...UInt64.max))\(suffix)"
    }

    /// What the kernel reports through statx(STATX_DIOALIGN) for a fresh regular file in
    /// `directory` (nil when the filesystem leaves the bit clear).
    package static func reportedDirectIOAlignment(in directory: String) throws -> DirectIOAlignment? {
        let file = directory + "/" + uniqueName(".dioalign-probe")
        let fd = open(file, O_CREAT | O_WRONLY, 0o600)
        guard fd >= 0 else { throw ProVideoError(.ioError, "cannot create \(file): \(errno)") }
        close(fd)
        defer { unlink(file) }
        let facts = try FileSystem.facts(file)
        return facts.directIOOffsetAlignment > 0
            ? DirectIOAlignment(memory: Int(facts.directIOMemoryAlignment), offset: Int(facts.directIOOffsetAlignment)) : nil
    }

    /// Sets a /proc/sys value for the duration of `body`, restoring the original value
    /// afterwards even when `body` throws.
    /// Tests that rely on io_uring hold this for reading; a test that changes a kernel-wide
    /// sysctl (kernel.io_uring_disabled) holds it for writing, so the two never overlap.
    package static let kernelSettings = ReadWriteGate()

    package static func withSysctl<T>(_ path: String, _ value: String, _ body: () throws -> T) throws -> T {
        try kernelSettings.writing { try withSysctlUngated(path, value, body) }
    }

    private static func withSysctlUngated<T>(_ path: String, _ value: String, _ body: () throws -> T) throws -> T {
        let original = try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        func write(_ text: String) throws {
            let fd = open(path, O_WRONLY)
            guard fd >= 0 else { throw ProVideoError(.ioError, "cannot open \(path): \(errno)") }
            defer { close(fd) }
            let bytes = Array((text + "\n").utf8)
            guard Glibc.write(fd, bytes, bytes.count) == bytes.count else {
                throw ProVideoError(.ioError, "cannot write \(text) to \(path): \(errno)")
            }
        }
        try write(value)
        defer { try? write(original) }
        return try body()
    }

    /// How long a child may run past the point where it should end before a test calls it hung,
    /// in seconds. A hang detector, never a speed bound: under `.ci/run --stress` a recorder
    /// given 20 s to finish 24 MiB on a loop ext4 was still finishing (it ended once told to).
    package static let hangLimit: Double = 300

    /// Waits for `process` to exit, terminating it (SIGTERM, then SIGKILL) after `hangLimit`.
    /// Returns false when it had to be killed. Ends in `waitUntilExit()` either way: until it is
    /// called, Foundation's `Process` and its run-loop source hold each other, so the child's
    /// pipes stay open in this process for good (see `start`).
    @discardableResult
    package static func wait(_ process: Process) -> Bool {
        let deadline = Date(timeIntervalSinceNow: hangLimit)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        guard process.isRunning else {
            process.waitUntilExit()
            return true
        }
        process.terminate()
        let grace = Date(timeIntervalSinceNow: 3)
        while process.isRunning && Date() < grace { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        return false
    }

    /// Frames for capture tests: `count` frames of `size` bytes cut from one deterministic
    /// pattern, each stamped with its index so no two frames are alike.
    package static func frames(count: Int, size: Int, seed: UInt64) -> [[UInt8]] {
        let stride = 61
        let base = pattern(size + stride * min(count, 4096) + 8, seed: seed)
        return (0..<count).map { index in
            var frame = Array(base[(index % 4096) * stride ..< (index % 4096) * stride + size])
            var stamp = UInt64(index).littleEndian
            withUnsafeBytes(of: &stamp) { raw in
                for i in 0..<min(8, size) { frame[i] = raw[i] }
            }
            return frame
        }
    }
}

extension TestSupport {
    /// The frames laid end to end (fast even in debug builds).
    package static func concatenated(_ frames: [[UInt8]]) -> [UInt8] {
        var all: [UInt8] = []
        all.reserveCapacity(frames.reduce(0) { $0 + $1.count })
        for frame in frames { all.append(contentsOf: frame) }
        return all
    }

    /// Whether the file at `path` holds exactly `expected` (memcmp, fast in debug builds).
    package static func fileEquals(_ path: String, _ expected: [UInt8]) -> Bool {
        guard let data = FileManager.default.contents(atPath: path), data.count == expected.count else { return false }
        return data.withUnsafeBytes { file in
            expected.withUnsafeBytes { memcmp(file.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!,
                                              $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!, expected.count) == 0 }
        }
    }
}

/// A pthread read-write lock (readers preferred, glibc's default).
package final class ReadWriteGate: @unchecked Sendable {
    private let lock = UnsafeMutablePointer<pthread_rwlock_t>.allocate(capacity: 1)

    package init() { pthread_rwlock_init(lock, nil) }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    package func reading<T>(_ body: () throws -> T) rethrows -> T {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }

    package func writing<T>(_ body: () throws -> T) rethrows -> T {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }
}

/// Path arithmetic for test predicates.
enum FileSystemPath {
    static func parent(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "" }
        return String(path[..<slash])
    }
}

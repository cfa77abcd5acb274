import Foundation
import Glibc
import Testing
import ProVideoStorage

/// Helpers for the Crash* and BadInput* tests.
package enum CrashKit {
    /// The allocation unit on the root filesystem, where these pools live (4096 on ext4).
    package static let unit: Int64 = {
        var s = statvfs()
        return statvfs("/tmp", &s) == 0 ? Int64(s.f_bsize) : 4096
    }()

    /// A killed child closes its end of a pipe the test may still be writing: the write must
    /// fail with EPIPE, not kill the test process.
    package static let ignoreSIGPIPE: Void = { signal(SIGPIPE, SIG_IGN); return () }()

    package struct Outcome: CustomStringConvertible {
        package var status: Int32
        package var reason: Process.TerminationReason
        package var stdout: String
        package var stderr: String
        package var killedBySIGKILL: Bool { reason == .uncaughtSignal && status == SIGKILL }
        package var description: String {
            "\(reason == .uncaughtSignal ? "signal" : "exit") \(status); stdout: \(stdout); stderr: \(stderr)"
        }
    }

    /// Runs `tool` (a built product name or an absolute path) to its end, feeding `input` to its
    /// standard input (tolerating a child that dies before reading it all).
    @discardableResult
    package static func run(_ tool: String, _ arguments: [String], input: [UInt8]? = nil,
                    environment: [String: String] = [:]) throws -> Outcome {
        _ = ignoreSIGPIPE
        let process = try TestSupport.start(tool, arguments, environment: environment, stdinPipe: input != nil)
        final class Box: @unchecked Sendable { var data = Data() }
        let out = Box(), err = Box()
        let group = DispatchGroup()
        let stdoutHandle = (process.standardOutput as! Pipe).fileHandleForReading
        let stderrHandle = (process.standardError as! Pipe).fileHandleForReading
        group.enter()
        DispatchQueue.global().async { out.data = stdoutHandle.readDataToEndOfFile(); group.leave() }
        group.enter()
        DispatchQueue.global().async { err.data = stderrHandle.readDataToEndOfFile(); group.leave() }
        if let input, let pipe = process.standardInput as? Pipe {
            let fd = pipe.fileHandleForWriting.fileDescriptor
            _ = writeAll(fd, input[...])
            try pipe.fileHandleForWriting.close()
        }
        if !TestSupport.wait(process) {
            Issue.record("\(tool) \(arguments) did not finish within \(TestSupport.hangLimit) s; it was killed")
        }
        group.wait()
        // Closed here, not when Foundation frees the `Process` (later, from its own thread).
        try? stdoutHandle.close()
        try? stderrHandle.close()
        return Outcome(status: process.terminationStatus, reason: process.terminationReason,
                       stdout: String(decoding: out.data, as: UTF8.self), stderr: String(decoding: err.data, as: UTF8.self))
    }

    /// `provideo --pool POOL ARGS...`.
    @discardableResult
    package static func provideo(_ pool: String, _ arguments: [String], input: [UInt8]? = nil,
                         environment: [String: String] = [:]) throws -> Outcome {
        try run("provideo", ["--pool", pool] + arguments, input: input, environment: environment)
    }

    /// Writes `bytes` to `fd`; returns how many were written before an error (EPIPE).
    @discardableResult
    package static func writeAll(_ fd: Int32, _ bytes: ArraySlice<UInt8>) -> Int {
        var done = 0
        bytes.withUnsafeBytes { raw in
            while done < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + done, raw.count - done)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return }
                done += n
            }
        }
        return done
    }

    /// Creates a pool with the CLI; throws (failing the test) when that fails.
    package static func createPool(_ pool: String, capacity: String = "16M", options: [String] = []) throws {
        try FS.createPool(pool, capacity: capacity, options: options)
    }

    package static func status(_ pool: String) throws -> PoolStatus { try TestSupport.poolStatus(pool) }

    /// Size and allocated bytes of `path` as coreutils `stat` reports them; nil when missing.
    package static func stat(_ path: String) -> (size: Int64, allocated: Int64)? {
        FileManager.default.fileExists(atPath: path) ? try? TestSupport.statSizes(path) : nil
    }

    package static func exists(_ path: String) -> Bool {
        var st = Glibc.stat()
        return lstat(path, &st) == 0
    }

    package static func contents(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    /// The state of a pool after any repair: `check` passes, nothing is busy or half done,
    /// and the capacity it reports is really reserved (compared with coreutils `stat`).
    /// - Returns: the status, for further checks.
    @discardableResult
    package static func expectSane(_ pool: String, _ context: String,
                           sourceLocation: SourceLocation = #_sourceLocation) throws -> PoolStatus {
        let check = try provideo(pool, ["check"])
        #expect(check.status == 0 && check.reason == .exit, "\(context): provideo check: \(check)",
                sourceLocation: sourceLocation)
        let status = try status(pool)
        #expect(status.busyReasons.isEmpty, "\(context): busy \(status.busyReasons)", sourceLocation: sourceLocation)
        #expect(status.captures.isEmpty, "\(context): a capture is still reported", sourceLocation: sourceLocation)
        let reserve = stat(pool + "/reserve") ?? (0, 0)
        #expect(status.remainingCapacity <= reserve.allocated,
                "\(context): remainingCapacity \(status.remainingCapacity) > the reserve's \(reserve.allocated) allocated bytes",
                sourceLocation: sourceLocation)
        #expect(status.remainingCapacity == reserve.size,
                "\(context): remainingCapacity \(status.remainingCapacity) vs the reserve's size \(reserve.size)",
                sourceLocation: sourceLocation)
        #expect(status.remainingCapacity <= status.initialCapacity,
                "\(context): remainingCapacity \(status.remainingCapacity) exceeds initialCapacity \(status.initialCapacity)",
                sourceLocation: sourceLocation)
        #expect(reserve.size % unit == 0, "\(context): reserve size \(reserve.size)", sourceLocation: sourceLocation)
        let invariant = try CapacityInvariant.read(pool)
        #expect(invariant.holds, "\(context): \(invariant)", sourceLocation: sourceLocation)
        let leftovers = contents(pool).filter { ["capture", "reserve.new", "pool.json.tmp"].contains($0) }
            + contents(pool + "/captures").map { "captures/" + $0 }
        #expect(leftovers.isEmpty, "\(context): left in the pool: \(leftovers)", sourceLocation: sourceLocation)
        return status
    }

    /// Everything about a directory tree that "nothing changed" covers: for each entry its type
    /// and mode, size, allocated blocks, and the SHA-256 of files up to 1 MiB (byte-identical;
    /// a file rewritten with the same bytes counts as unchanged).
    package static func snapshot(_ root: String) -> [String: String] {
        var result: [String: String] = [:]
        func visit(_ path: String, _ name: String) {
            var st = Glibc.stat()
            guard lstat(path, &st) == 0 else { return }
            let isDirectory = (st.st_mode & S_IFMT) == S_IFDIR
            var entry = "mode \(st.st_mode)" + (isDirectory ? "" : " size \(st.st_size) blocks \(st.st_blocks)")
            if (st.st_mode & S_IFMT) == S_IFREG && st.st_size <= 1 << 20 {
                entry += " sha \(TestSupport.sha256Hex(TestSupport.readFile(path)))"
            }
            result[name] = entry
            if isDirectory {
                for child in contents(path) { visit(path + "/" + child, name + "/" + child) }
            }
        }
        visit(root, ".")
        return result
    }

    /// The committed length a capture recorded (`capture/commit`), 0 when there is none.
    package static func committed(_ pool: String) -> Int64 { CaptureJournal.readCommitted(TestSupport.onlyCapture(pool) + "/commit") }

    /// The names passed to `CrashPoint.hit` anywhere in Sources/ProVideoStorage.
    package static func crashPointsInSources() throws -> Set<String> {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/ProVideoStorage").path
        var names: Set<String> = []
        let files = FileManager.default.subpaths(atPath: sources) ?? []
        for file in files where file.hasSuffix(".swift") {
            let text = try String(contentsOfFile: sources + "/" + file, encoding: .utf8)
            var rest = text[...]
            while let range = rest.range(of: "CrashPoint.hit(\"") {
                let tail = rest[range.upperBound...]
                guard let end = tail.firstIndex(of: "\"") else { break }
                names.insert(String(tail[..<end]))
                rest = tail[end...]
            }
        }
        return names
    }

    /// The path of the running test executable (the .xctest bundle binary), for re-running one
    /// test in a child process that may kill itself.
    package static var testExecutable: String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        let path = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return path.hasSuffix(".xctest") ? path : nil
    }

    /// ffprobe's verdict on a file: (codec, frames decoded), nil when it cannot decode it.
    package static func probe(_ path: String) throws -> (codec: String, frames: Int)? {
        let result = try run("/usr/bin/ffprobe", ["-v", "error", "-count_frames", "-select_streams", "v:0",
                                                  "-show_entries", "stream=nb_read_frames,codec_name", "-of", "csv=p=0", path])
        let fields = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",")
        guard result.status == 0, fields.count == 2, let frames = Int(fields[1]) else { return nil }
        return (String(fields[0]), frames)
    }

    /// Starts `provideo record` with `--durability 0` (as `user` through setpriv, with its
    /// groups, when given; `binary` is then a path every user may run), feeds `input`, waits
    /// until all of it is committed (the recorder keeps committing while its input is quiet),
    /// then SIGKILLs it.
    package static func killRecorderAfterCommit(_ pool: String, _ destination: String, _ input: [UInt8],
                                                as user: String? = nil, binary: String = "provideo") throws {
        _ = CrashKit.ignoreSIGPIPE
        let record = [binary, "--pool", pool, "record", destination, "--durability", "0", "--bitrate", "20M"]
        let recorder = try user.map {
            try TestSupport.start("/usr/bin/setpriv", ["--reuid=\($0)", "--regid=\($0)", "--init-groups"] + record,
                                  stdinPipe: true)
        } ?? TestSupport.start(binary, Array(record.dropFirst()), stdinPipe: true)
        defer {
            if recorder.isRunning { kill(recorder.processIdentifier, SIGKILL) }
            recorder.waitUntilExit()
        }
        let stdin = (recorder.standardInput as! Pipe).fileHandleForWriting
        #expect(CrashKit.writeAll(stdin.fileDescriptor, input[...]) == input.count)
        let deadline = Date(timeIntervalSinceNow: 20)
        while CrashKit.committed(pool) < Int64(input.count) && recorder.isRunning && Date() < deadline { usleep(10_000) }
        try #require(CrashKit.committed(pool) == Int64(input.count),
                     "the recorder committed \(CrashKit.committed(pool)) of \(input.count) bytes")
        kill(recorder.processIdentifier, SIGKILL)
        recorder.waitUntilExit()
        try? stdin.close()
        #expect(recorder.terminationReason == .uncaughtSignal && recorder.terminationStatus == SIGKILL)
        #expect(!CrashKit.exists(destination), "a file appeared at the destination before the salvage")
    }
}

/// Measures how long fdatasync takes on a filesystem while a test runs: a background thread
/// rewrites 4 KiB of a scratch file and flushes it every 50 ms. On a shared virtual disk a
/// flush can take from milliseconds to seconds (other processes' writeback); a capture's
/// commit is a flush, so a bound on what a crash loses must allow for it.
package final class FlushLatencyProbe: @unchecked Sendable {
    private let lock = NSLock()
    private var running = true
    private var worst = 0.0
    private let finished = DispatchSemaphore(value: 0)

    package init(directory: String) {
        let file = directory + "/" + TestSupport.uniqueName(".flush-probe")
        Thread.detachNewThread { [self] in
            let fd = open(file, O_RDWR | O_CREAT | O_TRUNC, 0o600)
            var block = [UInt8](repeating: 7, count: 4096)
            while lock.withLock({ running }) {
                block[0] &+= 1
                _ = pwrite(fd, block, block.count, 0)
                let start = DispatchTime.now().uptimeNanoseconds
                _ = fdatasync(fd)
                let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
                lock.withLock { worst = max(worst, seconds) }
                usleep(50_000)
            }
            close(fd)
            unlink(file)
            finished.signal()
        }
    }

    /// The longest flush seen since the last reset, in seconds; then starts over.
    package func takeWorst() -> Double { lock.withLock { defer { worst = 0 }; return worst } }

    package func stop() {
        lock.withLock { running = false }
        finished.wait()
    }
}

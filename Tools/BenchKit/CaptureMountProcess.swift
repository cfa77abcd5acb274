import Foundation
import Glibc
import ProVideoStorage

/// `provideo mount --foreground` of the benchmark's pool, run as its own process for the
/// mount mode, as a user would run it: `provideo` is `$PROVIDEO_BIN`, else the one beside
/// this program, else the first on `PATH`. Its recordings would land in `destination`; the mode cancels each one
/// (an unlink before the close), so the pool's capacity comes back as in pool mode.
package final class CaptureMountProcess {
    package let mountpoint: String
    let destination: String
    private let directory: String
    private let process: Process

    /// Whether this machine can run the mount mode: /dev/fuse and the `provideo` program.
    package static var isAvailable: Bool {
        FileManager.default.fileExists(atPath: "/dev/fuse") && FileManager.default.isExecutableFile(atPath: binary)
    }

    /// The `provideo` the mount mode runs. This program's own path is /proc/self/exe, not
    /// `argv[0]`: run by bare name from `PATH`, `argv[0]` names no directory.
    package static var binary: String {
        let environment = ProcessInfo.processInfo.environment
        if let named = environment["PROVIDEO_BIN"], !named.isEmpty { return named }
        let here = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        let beside = here.appendingPathComponent("provideo").path
        if FileManager.default.isExecutableFile(atPath: beside) { return beside }
        let onPath = (environment["PATH"] ?? "").split(separator: ":").map { String($0) + "/provideo" }
        return onPath.first { FileManager.default.isExecutableFile(atPath: $0) } ?? beside
    }

    /// Mounts `pool` at `directory/mnt`, showing `directory/landed`; returns once mounted.
    /// - Throws: `BenchError` when the mount does not appear within 15 s (with its output).
    package init(pool: Pool, directory: String, bitrate: Int64) throws {
        self.directory = directory
        mountpoint = directory + "/mnt"
        destination = directory + "/landed"
        for path in [mountpoint, destination] {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }
        process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = ["--pool", pool.path, "mount", mountpoint, "--destination", destination, "--foreground",
                             "--bitrate", String(bitrate)]
        // A file, not a pipe nobody drains: a daemon blocked on a full pipe would stall the run.
        let log = directory + "/mount.log"
        FileManager.default.createFile(atPath: log, contents: nil)
        process.standardError = FileHandle(forWritingAtPath: log)
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(15)
        while !Self.isMounted(mountpoint) && process.isRunning && Date() < deadline { usleep(10_000) }
        guard Self.isMounted(mountpoint) else {
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
            let said = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            throw BenchError("`provideo mount` did not mount \(mountpoint): \(said)")
        }
    }

    /// Unmounts and waits for the daemon to end (it finishes what is still open).
    package func stop() {
        if Self.isMounted(mountpoint) {
            let umount = Process()
            umount.executableURL = URL(fileURLWithPath: geteuid() == 0 ? "/bin/umount" : "/bin/fusermount3")
            umount.arguments = geteuid() == 0 ? [mountpoint] : ["-u", mountpoint]
            try? umount.run()
            umount.waitUntilExit()
        }
        let deadline = Date().addingTimeInterval(30)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        // What the daemon logged (its slow requests with PROVIDEO_MOUNT_DEBUG=slow) goes with the run's output.
        if let said = try? String(contentsOfFile: directory + "/mount.log", encoding: .utf8) {
            for line in said.split(separator: "\n") where line.hasPrefix("provideo mount: ") {
                FileHandle.standardError.write(Data((line + "\n").utf8))
            }
        }
        if !Self.isMounted(mountpoint) { try? FileManager.default.removeItem(atPath: directory) }
    }

    /// CPU seconds the daemon has used (user and system, all its threads), from
    /// /proc/PID/stat: the mount mode's CPU is the recorders' plus the daemon's.
    package var cpuSeconds: Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return 0 }
        // Fields after the command name: state is 3, utime 14, stime 15 (proc(5)).
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    static func isMounted(_ path: String) -> Bool {
        ((try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8)) ?? "").split(separator: "\n")
            .contains { $0.split(separator: " ").dropFirst().first.map(String.init) == path }
    }
}

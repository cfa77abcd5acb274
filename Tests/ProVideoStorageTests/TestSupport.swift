import Foundation
import Glibc
@testable import ProVideoStorage

/// Shared helpers for the tests: scratch directories, running the built tools as separate
/// processes, and loop-mounted filesystems (root only).
enum TestSupport {
    static var isRoot: Bool { geteuid() == 0 }

    /// A fresh directory under /tmp/provideo-tests; remove it with `removeTree`.
    static func scratchDirectory(_ name: String = #function) -> String {
        let base = "/tmp/provideo-tests"
        try? FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        let clean = name.filter { $0.isLetter || $0.isNumber }.prefix(40)
        var template = Array("\(base)/\(clean)-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { fatalError("mkdtemp failed: \(errno)") }
        return String(cString: made)
    }

    static func removeTree(_ path: String) {
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Runs `body` with a scratch directory that is removed afterwards, even when `body` throws.
    static func withScratch<T>(_ name: String = #function, _ body: (String) throws -> T) rethrows -> T {
        let directory = scratchDirectory(name)
        defer { removeTree(directory) }
        return try body(directory)
    }

    /// The directory holding the built products (`provideo`, `provideo-bench`).
    static var productsDirectory: String {
        var url = Bundle.main.bundleURL
        while url.pathComponents.count > 1 && !FileManager.default.fileExists(atPath: url.appendingPathComponent("provideo").path) {
            url.deleteLastPathComponent()
        }
        return url.path
    }

    struct ProcessResult {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs a built tool (`provideo`, `provideo-bench`) or any absolute executable to its end.
    @discardableResult
    static func run(_ tool: String, _ arguments: [String], stdin: Data? = nil,
                    environment: [String: String] = [:]) throws -> ProcessResult {
        let process = try start(tool, arguments, environment: environment, stdinPipe: stdin != nil)
        if let stdin, let pipe = process.standardInput as? Pipe {
            try pipe.fileHandleForWriting.write(contentsOf: stdin)
            try pipe.fileHandleForWriting.close()
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
        return ProcessResult(status: process.terminationStatus, stdout: String(decoding: outputData, as: UTF8.self),
                             stderr: String(decoding: errorData.data, as: UTF8.self))
    }

    /// Starts a tool with piped standard output and error (and input when `stdinPipe`).
    static func start(_ tool: String, _ arguments: [String], environment: [String: String] = [:],
                      stdinPipe: Bool = false) throws -> Process {
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

    /// Runs a shell command as a helper step (mkfs, mount); throws when it fails.
    @discardableResult
    static func shell(_ command: String) throws -> String {
        let result = try run("/bin/sh", ["-c", command])
        guard result.status == 0 else {
            throw ProVideoError(.ioError, "`\(command)` failed (\(result.status)): \(result.stderr)")
        }
        return result.stdout
    }

    /// Deterministic bytes for content checks.
    static func pattern(_ count: Int, seed: UInt64) -> [UInt8] {
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

    static func readFile(_ path: String) -> [UInt8] {
        Array(FileManager.default.contents(atPath: path) ?? Data())
    }
}

/// A filesystem image on a loop device, mounted under a scratch directory (root only).
/// `LoopFilesystem.with` unmounts, detaches and deletes it even when the body throws.
struct LoopFilesystem {
    let type: String
    let mountPoint: String
    let device: String

    /// - Parameters:
    ///   - type: "ext4", "xfs", "btrfs" or "tmpfs" (tmpfs needs no device).
    ///   - megabytes: the image size.
    ///   - sectorSize: the loop device's logical sector size (512 or 4096).
    static func with<T>(_ type: String, megabytes: Int = 320, sectorSize: Int = 512,
                        _ body: (LoopFilesystem) throws -> T) throws -> T {
        let scratch = TestSupport.scratchDirectory("loop-\(type)")
        let mountPoint = scratch + "/mnt"
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        defer { TestSupport.removeTree(scratch) }
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
        case "btrfs": mkfs = "mkfs.btrfs -q -f"
        default: mkfs = "mkfs.ext4 -q -F"
        }
        try TestSupport.shell("\(mkfs) \(device)")
        try TestSupport.shell("mount \(device) \(mountPoint)")
        defer { _ = try? TestSupport.shell("umount \(mountPoint) || umount -l \(mountPoint)") }
        return try body(LoopFilesystem(type: type, mountPoint: mountPoint, device: device))
    }
}

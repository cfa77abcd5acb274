import CProVideo
import Foundation
import Glibc
import ProVideoStorage
import Testing

/// Helpers shared by the filesystem suites.
package enum FS {
    package static let types = ["ext4", "xfs", "btrfs"]

    /// Runs `provideo --pool POOL ARGS...`.
    @discardableResult
    package static func provideo(_ pool: String, _ arguments: String..., stdin: Data? = nil) throws -> TestSupport.ProcessResult {
        try TestSupport.run("provideo", ["--pool", pool] + arguments, stdin: stdin)
    }

    /// Creates a pool with the CLI, fails the test (throws) if that fails.
    package static func createPool(_ pool: String, capacity: String, options: [String] = []) throws {
        let result = try TestSupport.run("provideo", ["--pool", pool, "create", "--capacity", capacity] + options)
        try #require(result.status == 0, "create failed: \(result.stderr)")
    }

    /// Runs `body` with a pool created by the CLI at `<mount point>/pool` on a fresh loop-mounted
    /// `type` filesystem; the pool is destroyed and the filesystem unmounted afterwards.
    package static func withPool<T>(_ type: String, sectorSize: Int = 512, capacity: String,
                            _ body: (LoopFilesystem, String) throws -> T) throws -> T {
        try LoopFilesystem.with(type, sectorSize: sectorSize) { fs in
            let pool = fs.mountPoint + "/pool"
            try createPool(pool, capacity: capacity)
            defer { destroyQuietly(pool) }
            return try body(fs, pool)
        }
    }

    /// Runs `body` with a scratch directory and a pool created by the CLI at `<scratch>/pool`;
    /// both are removed afterwards, even when `body` throws.
    package static func withScratchPool<T>(_ name: String = #function, capacity: String,
                                           _ body: (_ directory: String, _ pool: String) throws -> T) throws -> T {
        try TestSupport.withScratch(name) { directory in
            let pool = directory + "/pool"
            try createPool(pool, capacity: capacity)
            defer { destroyQuietly(pool) }
            return try body(directory, pool)
        }
    }

    /// Starts `provideo --pool POOL record DEST ARGS...` reading from a pipe; returns the
    /// process and the pipe's writing end.
    package static func startRecorder(_ pool: String, _ destination: String, _ arguments: [String] = [])
        throws -> (process: Process, input: FileHandle) {
        let process = try TestSupport.start("provideo", ["--pool", pool, "record", destination] + arguments, stdinPipe: true)
        return (process, (process.standardInput as! Pipe).fileHandleForWriting)
    }

    /// Destroys a pool if it is still there (cleanup; failures are ignored).
    package static func destroyQuietly(_ pool: String) {
        if FileManager.default.fileExists(atPath: pool + "/pool.json") {
            _ = try? provideo(pool, "destroy")
        }
    }

    /// The unit every reserve size and recording is rounded to, computed from what the pool
    /// reports as its direct-I/O alignment and what statvfs reports as the block size.
    package static func allocationUnit(_ status: PoolStatus, mount: String) throws -> Int64 {
        let block = try TestSupport.freeSpace(mount).blockSize
        return max(Int64(status.directIOAlignment.offset), Int64(status.directIOAlignment.memory), block)
    }

    /// `status --json` agrees with coreutils `stat` about the reserve: `reservedBytesOnDisk`
    /// equals %b*%B, the reserve is fully allocated, and its size is `remainingCapacity`.
    package static func expectReserveMatchesStat(_ pool: String, _ status: PoolStatus,
                                         sourceLocation: SourceLocation = #_sourceLocation) throws {
        let reserve = try TestSupport.statSizes(pool + "/reserve")
        #expect(status.reservedBytesOnDisk == reserve.allocated, "reservedBytesOnDisk vs stat %b*%B",
                sourceLocation: sourceLocation)
        #expect(reserve.allocated >= reserve.size, "the reserve is not fully allocated", sourceLocation: sourceLocation)
        #expect(status.remainingCapacity == reserve.size, "remainingCapacity vs the reserve's size",
                sourceLocation: sourceLocation)
    }

    /// "(123 bytes) missing" → 123.
    package static func missingBytes(in message: String) -> Int64? {
        guard let range = message.range(of: #"\((\d+) bytes\) missing"#, options: .regularExpression) else { return nil }
        return Int64(message[range].dropFirst().prefix(while: \.isNumber))
    }

    /// Fills the filesystem at `mount` with preallocated files (under `mount/filler`) until
    /// less than one block is free (statvfs f_bfree), so nothing more can be allocated. Passes
    /// repeat after a syncfs(2) (`sync -f`) until one allocates nothing: ext4 counts the blocks of a failed
    /// fallocate's file, unlinked, as free at once but hands them out only after the journal's
    /// commit, which a busy machine delays past the allocator's retries; a single pass then left
    /// megabytes that a later write found (CI: a copy to an "exhausted" filesystem landed).
    package static func fill(_ mount: String) throws {
        let directory = mount + "/filler"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var index = 0
        while try fillPass(mount, directory, index: &index) {
            try TestSupport.shell("sync -f '\(mount)'")
        }
    }

    /// One pass of `fill`: whether it allocated anything.
    private static func fillPass(_ mount: String, _ directory: String, index: inout Int) throws -> Bool {
        var chunk = Int64.max
        var allocated = false
        while true {
            let space = try TestSupport.freeSpace(mount)
            chunk = min(chunk, space.free) / space.blockSize * space.blockSize
            if chunk < space.blockSize { return allocated }
            let path = "\(directory)/\(index)"
            let fd = open(path, O_CREAT | O_WRONLY, 0o600)
            if fd < 0 && errno == ENOSPC { return allocated }
            guard fd >= 0 else { throw ProVideoError(.ioError, "cannot create \(path): \(errno)") }
            let rc = pv_fallocate(fd, 0, 0, chunk)
            close(fd)
            if rc == 0 {
                index += 1
                allocated = true
            } else {
                unlink(path)
                chunk /= 2
            }
        }
    }
}

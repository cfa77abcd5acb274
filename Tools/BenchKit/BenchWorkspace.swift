import Foundation
import ProVideoStorage

/// The pool a benchmark writes every stream into (a pool runs several captures at once) and a
/// scratch directory on the same filesystem for the other modes' files. When none was named
/// and the default pool is missing or cannot hold the run, it says why, creates a scratch pool
/// under /var/tmp and destroys it on `release()`.
package final class BenchWorkspace {
    package let pool: Pool
    /// Removed with everything in it on `release()`.
    package let directory: String
    private let createdPool: Bool

    /// - Parameters:
    ///   - path: the pool named with `--pool` (or `$PROVIDEO_POOL`); nil for the default.
    ///   - minimumBytes: reserve the pool must have left for every stream together, in bytes.
    ///   - scratchBytes: the capacity of a scratch pool (default `minimumBytes`).
    /// - Throws: `BenchError` when a named pool is missing or its reserve is too small.
    package convenience init(path: String?, minimumBytes: Int64, scratchBytes: Int64? = nil, log: (String) -> Void) throws {
        try self.init(path: path, scratchBytes: scratchBytes, log: log) { _ in minimumBytes }
    }

    /// - Parameters:
    ///   - needed: the reserve a pool of the given capacity (bytes) must have left for the run
    ///     (a capture's grant step depends on its pool's capacity); it must not fall as the
    ///     capacity grows. A scratch pool is given `needed(Int64.max)` (default capacity).
    package init(path: String?, scratchBytes: Int64? = nil, log: (String) -> Void, needed: (Int64) -> Int64) throws {
        let scratchBytes = scratchBytes ?? needed(Int64.max)
        let named = Pool.resolvePath(path)
        if path == nil, let reason = try Self.defaultPoolUnfit(named, needed: needed) {
            for stale in Self.staleScratchDirectories() {
                log("\(stale) was left by an interrupted run (its process is gone): `rm -rf \(stale)` frees its space")
            }
            directory = "/var/tmp/provideo-bench-\(getpid())"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            log("\(reason): creating a scratch pool of \(ByteFormat.human(scratchBytes)) in \(directory)")
            do {
                pool = try Pool.create(at: "\(directory)/pool", capacity: scratchBytes, measuringBandwidth: false)
            } catch {
                try? FileManager.default.removeItem(atPath: directory)
                throw error
            }
            createdPool = true
            return
        }
        pool = try Pool.open(at: named)
        let remaining = try pool.remainingCapacity
        let minimumBytes = needed(try pool.initialCapacity)
        guard remaining >= minimumBytes else {
            // A larger pool may take larger grant steps: grow by what the largest steps need.
            let grown = try pool.initialCapacity + max(needed(Int64.max), minimumBytes) - remaining
            let mebibytes = (grown + (1 << 20) - 1) >> 20
            throw BenchError("the pool at \(named) has \(ByteFormat.human(remaining)) of reserve left; this run needs "
                             + "\(ByteFormat.human(minimumBytes)) for all its streams (their frames and the grants each "
                             + "capture holds ahead). Grow it (`provideo --pool \(named) resize \(mebibytes)M`), replenish it, "
                             + "or shorten --duration / lower --bitrate")
        }
        directory = Self.parentDirectory(of: pool.path) + "/provideo-bench-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        createdPool = false
    }

    /// Why the default pool cannot hold this run (missing, too small), nil when it can.
    static func defaultPoolUnfit(_ path: String, minimumBytes: Int64) throws -> String? {
        try defaultPoolUnfit(path) { _ in minimumBytes }
    }

    static func defaultPoolUnfit(_ path: String, needed: (Int64) -> Int64) throws -> String? {
        guard FileManager.default.fileExists(atPath: path + "/pool.json") else { return "no pool at \(path)" }
        let pool = try Pool.open(at: path)
        let remaining = try pool.remainingCapacity
        let minimumBytes = needed(try pool.initialCapacity)
        guard remaining >= minimumBytes else {
            return "the pool at \(path) has \(ByteFormat.human(remaining)) of reserve left, this run needs "
                + "\(ByteFormat.human(minimumBytes)) (\(minimumBytes) bytes)"
        }
        return nil
    }

    /// Free bytes on the workspace's filesystem.
    package func availableBytes() -> Int64 {
        let attributes = try? FileManager.default.attributesOfFileSystem(forPath: directory)
        return (attributes?[.systemFreeSize] as? NSNumber)?.int64Value ?? 0
    }

    /// Destroys a scratch pool and removes the scratch directory.
    package func release() {
        if createdPool { try? pool.destroy() }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Scratch directories whose benchmark process no longer exists (a SIGKILLed run).
    static func staleScratchDirectories() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/var/tmp")) ?? []
        return names.compactMap { name -> String? in
            guard name.hasPrefix("provideo-bench-"), let pid = Int32(name.dropFirst("provideo-bench-".count)),
                  kill(pid, 0) != 0, errno == ESRCH else { return nil }
            return "/var/tmp/" + name
        }.sorted()
    }

    private static func parentDirectory(of path: String) -> String {
        let parent = (path as NSString).deletingLastPathComponent
        return parent.isEmpty ? "/" : parent
    }
}

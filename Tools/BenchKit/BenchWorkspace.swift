import Foundation
import ProVideoStorage

/// The pools a benchmark writes into and a scratch directory on the same filesystem for the
/// other modes' files. When none was named and the default pool is missing or cannot hold the
/// run, it says why, creates scratch pools under /var/tmp and destroys them on `release()`.
public final class BenchWorkspace {
    public let pools: [Pool]
    /// Removed with everything in it on `release()`.
    public let directory: String
    private let createdPools: Bool

    /// - Parameters:
    ///   - paths: the pools named with `--pool` (or `$PROVIDEO_POOL`); empty for the default.
    ///   - count: pools needed (one per stream in pool mode).
    ///   - bytesEach: the capacity of a scratch pool, in bytes.
    ///   - minimumBytes: reserve each named pool must have left, in bytes.
    /// - Throws: `BenchError` when a named pool is missing or its reserve is too small.
    public init(paths: [String], count: Int, bytesEach: Int64, minimumBytes: Int64, log: (String) -> Void) throws {
        let named = paths.isEmpty ? [Pool.resolvePath(nil)] : paths.map { Pool.resolvePath($0) }
        if paths.isEmpty, let reason = try Self.defaultPoolUnfit(named[0], count: count, minimumBytes: minimumBytes) {
            for stale in Self.staleScratchDirectories() {
                log("\(stale) was left by an interrupted run (its process is gone): `rm -rf \(stale)` frees its space")
            }
            directory = "/var/tmp/provideo-bench-\(getpid())"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            log("\(reason): creating \(count) scratch pool(s) of \(ByteFormat.human(bytesEach)) in \(directory)")
            var pools: [Pool] = []
            do {
                for index in 0..<count {
                    pools.append(try Pool.create(at: "\(directory)/pool-\(index)", capacity: bytesEach))
                }
            } catch {
                for pool in pools { try? pool.destroy() }
                try? FileManager.default.removeItem(atPath: directory)
                throw error
            }
            self.pools = pools
            createdPools = true
            return
        }
        guard named.count >= count else {
            throw BenchError("pool mode needs one pool per stream (a pool runs one capture at a time): \(count) streams, "
                             + "\(named.count) pool(s); pass --pool once per stream")
        }
        var pools: [Pool] = []
        for path in named.prefix(count) {
            let pool = try Pool.open(at: path)
            let remaining = try pool.remainingCapacity
            guard remaining >= minimumBytes else {
                throw BenchError("the pool at \(path) has \(ByteFormat.human(remaining)) of reserve left; this run needs "
                                 + "\(ByteFormat.human(minimumBytes)) per stream. Grow it (`provideo --pool \(path) resize "
                                 + "SIZE`), replenish it, or shorten --duration / lower --bitrate")
            }
            pools.append(pool)
        }
        self.pools = pools
        directory = Self.parentDirectory(of: pools[0].path) + "/provideo-bench-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        createdPools = false
    }

    /// Why the default pool cannot hold this run (missing, one pool for several streams, too
    /// small), nil when it can.
    static func defaultPoolUnfit(_ path: String, count: Int, minimumBytes: Int64) throws -> String? {
        guard FileManager.default.fileExists(atPath: path + "/pool.json") else { return "no pool at \(path)" }
        if count > 1 { return "the pool at \(path) runs one capture, this run needs \(count) (one per stream)" }
        let remaining = try Pool.open(at: path).remainingCapacity
        guard remaining >= minimumBytes else {
            return "the pool at \(path) has \(ByteFormat.human(remaining)) of reserve left, this run needs "
                + "\(ByteFormat.human(minimumBytes)) (\(minimumBytes) bytes)"
        }
        return nil
    }

    /// Free bytes on the workspace's filesystem.
    public func availableBytes() -> Int64 {
        let attributes = try? FileManager.default.attributesOfFileSystem(forPath: directory)
        return (attributes?[.systemFreeSize] as? NSNumber)?.int64Value ?? 0
    }

    /// Destroys scratch pools and removes the scratch directory.
    public func release() {
        if createdPools { for pool in pools { try? pool.destroy() } }
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

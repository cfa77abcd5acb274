/// Online discard on the pool's filesystem (`discard` among its superblock options in
/// /proc/self/mountinfo), named with what it costs and its remedies by `create`, `status`,
/// `check` and `provideo-bench size` (issue 64). With it, every block the filesystem frees waits
/// for the device's discard of it, inline in the truncate: a grant's cut of the reserve, a
/// give-back, a take deleted beside the recorders.
package struct OnlineDiscard: Codable, Sendable, Equatable {
    /// Where the pool's filesystem is mounted.
    package var mountPoint: String
    /// Its type as mountinfo names it ("ext4", "xfs").
    package var filesystem: String
    /// What it costs the pool and what to do about it, in one sentence.
    package var message: String

    /// The online discard of the filesystem holding `path`; nil when it is mounted without it,
    /// or when its mount is not found (a path that does not exist).
    /// - Parameter grantsByExchange: the pool's grants move extents (`GrantMethod.extentExchange`)
    ///   and free nothing: only give-backs of written bytes and deleted takes still discard.
    package static func of(_ path: String, grantsByExchange: Bool) -> OnlineDiscard? {
        MountInfo.holding(path).flatMap { of($0, grantsByExchange: grantsByExchange) }
    }

    /// The online discard a mount shows; nil when its superblock options do not include
    /// `discard` ("nodiscard" is not it, nor btrfs's `discard=async`, which queues the discards
    /// and returns).
    static func of(_ mount: MountInfo, grantsByExchange: Bool) -> OnlineDiscard? {
        guard mount.superOptions.contains("discard") else { return nil }
        let where_ = "the pool's filesystem (\(mount.type) at \(mount.mountPoint)) is mounted with online discard (`discard`)"
        // Measured on this project's ext4 `discard` VM (issue 64, Docs/BENCHMARKS.md): what a
        // reader can weigh against its own disk.
        let cost = grantsByExchange
            ? "grants move the reserve's blocks and free nothing, but each give-back of written bytes and each "
                + "take deleted beside the recorders waits for the device's discards"
            : "every grant cuts the reserve and every give-back cuts a capture's file, and each waits for the device's "
                + "discards of what it freed (measured on a `discard` ext4: cuts' p99 4.8–12.2 s, a capture's "
                + "fallocate up to 8.5 s behind them, 0.44–0.99 GB/s written where 16 streams needed 1.8: "
                + "10 streams held where the device sustained 21)"
        let remedy = grantsByExchange
            ? "remedy: mount it `nodiscard` and trim periodically with util-linux's `fstrim.timer`"
            : "remedies: mount it `nodiscard` and trim periodically with util-linux's `fstrim.timer`, or put the pool "
                + "on XFS made with exchange-range (`mkfs.xfs -i exchange=1`, xfsprogs 6.10+, Linux 6.10+), where "
                + "grants move the reserve's blocks and free nothing"
        return OnlineDiscard(mountPoint: mount.mountPoint, filesystem: mount.type, message: "\(where_): \(cost); \(remedy)")
    }
}

import ProVideoSystem

/// When a finished recording whose destination is on another filesystem than the pool is
/// copied there.
public enum LandingMode: String, Sendable, Codable, CaseIterable {
    /// In the background for destinations on network and FUSE filesystems (GlusterFS, CephFS,
    /// NFS, SMB), where a copy takes long and may fail for a while; in `finish()` elsewhere.
    case automatic
    /// In `finish()`, which returns once the copy is verified and published.
    case inFinish = "finish"
    /// In the background: `finish()` returns once the recording is sealed and durable in the
    /// pool; `provideo land` copies it (see `Pool.land`).
    case background

    /// statfs(2) `f_type` values (linux/magic.h) of filesystems reached over a network or
    /// through FUSE: FUSE (GlusterFS, CephFS's ceph-fuse, sshfs), NFS, SMB/CIFS, CephFS, AFS,
    /// 9p, OCFS2, GFS2.
    static let networkFilesystems: Set<Int64> = [0x6573_5546, 0x6969, 0x517B, 0xFE53_4D42, 0xFF53_4D42, 0x00C3_6400,
                                                 0x5346_414F, 0x0102_1997, 0x7461_636F, 0x0116_1970]

    /// Whether a capture to `destination` (its directory resolved) lands in the background:
    /// only when the destination is on another filesystem than the pool.
    /// - Throws: `.ioError` when statx or statfs fails on the destination's directory.
    func landsInBackground(_ destination: String, poolDirectory: String) throws -> Bool {
        let directory = FileSystem.parent(of: destination)
        let (there, pool) = (try FileSystem.facts(directory), try FileSystem.facts(poolDirectory))
        guard there.deviceMajor != pool.deviceMajor || there.deviceMinor != pool.deviceMinor else { return false }
        switch self {
        case .inFinish: return false
        case .background: return true
        case .automatic: return Self.networkFilesystems.contains(try FileSystem.space(directory).type)
        }
    }
}

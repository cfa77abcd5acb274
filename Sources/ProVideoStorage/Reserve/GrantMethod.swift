/// How the pool's grants move the reserve's space into a capture's file, and its give-backs
/// move it back (issue 64), as `status` and `status --json` name it.
package enum GrantMethod: String, Codable, Sendable, Equatable {
    /// `XFS_IOC_EXCHANGE_RANGE`: the reserve's unwritten extents move into the capture's file,
    /// and back: nothing allocated, nothing freed, nothing for a `discard` mount to wait on.
    case extentExchange = "extent exchange"
    /// `fallocate` of the capture's file, then `ftruncate` of the reserve by as much (a give-back:
    /// the capture's file cut, the reserve grown): every other filesystem.
    case fallocateAndCut = "fallocate and cut"
}

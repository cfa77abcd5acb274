import Glibc
import ProVideoSystem

extension Reserve {
    /// Grows the reserve by up to `wanted` bytes: all of it if it fits, else what the filesystem's
    /// free space allows, trying smaller amounts a bounded number of times (each failed try is
    /// rolled back exactly, so retries never eat the disk).
    /// - Returns: the bytes added.
    func refill(by wanted: Int64) throws -> Int64 {
        guard wanted > 0 else { return 0 }
        let fd = try open(create: true, nocow: isBtrfs)
        let start = try size()
        var attempt = rounded(wanted)
        var lastError: ProVideoError?
        for _ in 0..<8 where attempt > 0 {
            do {
                try grow(fd, from: start, to: start + attempt)
                return attempt
            } catch let error as ProVideoError where error.code == .notEnoughSpace {
                lastError = error
                // What the filesystem says it can take, else half (the report can be optimistic:
                // btrfs metadata), never more than the last try.
                let usable = try usableBytes(reaching: start + attempt)
                attempt = (usable < attempt ? usable : attempt / 2) / unit * unit
            }
        }
        throw ProVideoError(.notEnoughSpace, "the filesystem has no space to add to the reserve "
                            + "(\(lastError?.message ?? "nothing free")); free some space, then replenish again",
                            errno: ENOSPC, path: FileSystem.parent(of: path), remedies: [.replenish])
    }
}

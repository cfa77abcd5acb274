import Glibc

/// Moves space from the pool's reserve to a capture's file, ahead of the capture's write head,
/// so that every write still lands on preallocated blocks on every filesystem (ext4 has no
/// reflink to move extents between files): `fallocate(data, granted, n)` gives the capture's
/// file `n` more preallocated bytes, then `ftruncate(reserve, size − n)` gives the reserve's
/// last `n` bytes back to the filesystem. Grants are made under the pool's reserve lock, so two
/// captures never take the same bytes (Docs/MULTI-CHANNEL.md has the design and its costs).
///
/// Order 1 → 2 never leaves freed bytes for another writer to take. It needs `n` bytes free
/// beside the reserve; on a filesystem too full for that, the reserve gives them up first.
/// A power cut can lose a grant's bookkeeping either way: a capture's file larger than what
/// the reserve gave (`Pool.repair(control:)` cuts the reserve to `initialCapacity` less what the
/// captures hold), or a reserve smaller than it should be (`replenish` restores it).
struct ReserveGrants {
    let reserve: Reserve
    let lock: PoolLock

    /// Grants up to `bytes` (rounded down to the reserve's unit) to the capture's file `data`,
    /// which holds `granted` bytes so far. A grant made ahead of need (`sharing`) takes at most
    /// half of what the reserve has left (at least 1 MiB), so that a nearly empty reserve is
    /// shared among the captures that run rather than taken by the first to ask.
    /// `cutting(reserveBefore, amount)` is called, with the reserve lock held, before each cut of
    /// the reserve: until the grant returns, the reserve is `reserveBefore` or
    /// `reserveBefore - amount` and nobody else changes it (the granter's exact
    /// `remainingCapacity`). `allocated(amount)` is called as soon as the capture's file holds
    /// the `amount` new bytes: after `cutting`, and before the cut itself when the filesystem
    /// has room for both. The cut frees blocks, which on a `discard` mount waits for the
    /// device's discards (on ext4 beside a writer, a cut of 210 MiB took 55–716 ms), and the
    /// capture can write its new bytes meanwhile.
    /// - Returns: the bytes granted: 0 when the reserve is empty.
    /// - Throws: `.ioError`: the capture's file and the reserve are as they were, unless the
    ///   reserve's cut failed after `allocated`: the file then keeps its new bytes, counted
    ///   twice until `Pool.repair(control:)`, as after a power cut between the two steps;
    ///   `.busy` when the reserve lock stayed taken for 30 s.
    func grant(_ bytes: Int64, to data: FileDescriptor, granted: Int64, sharing: Bool,
               allocated: (_ amount: Int64) -> Void = { _ in },
               cutting: (_ reserveBefore: Int64, _ amount: Int64) -> Void = { _, _ in }) throws -> Int64 {
        try lock.withReserve {
            // A grant from anywhere but the file's end would count bytes the file already has.
            let size = Int64(try data.facts().size)
            guard size == granted else {
                throw ProVideoError(.invariantViolated, "a grant from offset \(granted) of \(data.path), whose size is "
                                    + "\(size)", path: data.path)
            }
            let available = try reserve.size()
            let share = sharing ? max(available / 2, min(available, 1 << 20)) : available
            let amount = max(min(bytes, share) / reserve.unit * reserve.unit, min(available, reserve.unit))
            guard amount > 0 else { return 0 }
            let calls = reserve.calls
            let reserveFD = try reserve.open(nocow: false)
            var rc = calls.fallocate(data.rawValue, false, granted, amount)
            if rc == -ENOSPC || rc == -EDQUOT {
                let full = ProVideoError.system("fallocate", errno: -rc, path: data.path)
                do { try rollBack(data, to: granted) } catch {
                    throw Rollback.keepingFirst(full, restoring: "the capture's file's size (\(granted) bytes)") { throw error }
                }
                cutting(available, amount)
                try reserveFD.truncate(available - amount, calls)
                rc = calls.fallocate(data.rawValue, false, granted, amount)
                if rc < 0 {
                    // The reserve gave `amount` up for nothing: it grows back, or the error says
                    // the pool is that much short (`provideo replenish` restores it).
                    throw Rollback.keepingFirst(ProVideoError.system("fallocate", errno: -rc, path: data.path),
                                                restoring: "the capture's file and \(amount) bytes of the reserve "
                                                + "(`provideo replenish` restores them)") {
                        try rollBack(data, to: granted)
                        try reserve.grow(reserveFD, from: available - amount, to: available)
                    }
                }
                allocated(amount)
                return amount
            }
            if rc < 0 {
                throw Rollback.keepingFirst(ProVideoError.system("fallocate", errno: -rc, path: data.path),
                                            restoring: "the capture's file's size (\(granted) bytes)") {
                    try rollBack(data, to: granted)
                }
            }
            CrashPoint.hit("grant.allocated")
            cutting(available, amount)
            allocated(amount)
            try reserveFD.truncate(available - amount, calls)
            return amount
        }
    }

    /// Puts the capture's file back to `size` bytes, freeing blocks a failed fallocate kept.
    private func rollBack(_ data: FileDescriptor, to size: Int64) throws {
        try Reserve(path: data.path, calls: reserve.calls, access: reserve.access, unit: reserve.unit,
                    blockSize: reserve.blockSize, isBtrfs: reserve.isBtrfs).rollBack(data, to: size)
    }
}

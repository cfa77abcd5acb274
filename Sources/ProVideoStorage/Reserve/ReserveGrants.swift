import Glibc
import ProVideoSystem

/// Moves space from the pool's reserve to a capture's file, ahead of the capture's write head,
/// so that every write still lands on preallocated blocks on every filesystem (ext4 has no
/// reflink to move extents between files). A grant is three steps (issue 44):
/// 1. `claim`: under the reserve lock, for a few reads and one pwrite, it takes `n` bytes of
///    what the reserve holds beyond every grant in flight (`ReserveClaims`);
/// 2. `allocate`: `fallocate(data, granted, n)` gives the capture's file `n` more preallocated
///    bytes, with no lock (on ext4 it waits for the capture's own writes in flight,
///    `inode_dio_wait`: 90–161 ms with 32 × 4 MiB in flight);
/// 3. `cut`: `ftruncate(reserve, size − n)` gives the reserve's last `n` bytes back to the
///    filesystem, under the reserve's size lock only (on a `discard` mount it waits for the
///    device's discards: 55–716 ms for 210 MiB beside a writer), then clears the claim.
/// So a capture's grant waits for no other capture's fallocate, cut or give-back, and the
/// claims keep two captures from taking the same bytes (Docs/MULTI-CHANNEL.md has the design
/// and its measurements).
///
/// Where the filesystem moves extents between files (`ExtentExchange`: XFS with exchange-range),
/// steps 2 and 3 are one, under the size lock: the capture's file is extended by a hole, the
/// reserve's last `n` bytes are exchanged into it (`XFS_IOC_EXCHANGE_RANGE`), and the reserve,
/// whose tail is now the hole, is cut: nothing is allocated or freed, and it takes 0.03–0.18 ms
/// for 64 MiB (issue 64). The claim and the accounting are the same.
///
/// Order 2 → 3 never leaves freed bytes for another writer to take. It needs `n` bytes free
/// beside the reserve; on a filesystem too full for that, the reserve gives them up first.
/// A kill or a power cut can lose a grant's bookkeeping either way: a capture's file larger than
/// what the reserve gave (`Pool.repair(control:)` cuts the reserve to `initialCapacity` less
/// what the captures hold), or a reserve smaller than it should be (`replenish` restores it).
struct ReserveGrants {
    let reserve: Reserve
    let lock: PoolLock

    /// Step 1: claims up to `bytes` (rounded down to the reserve's unit) for the capture's file
    /// `data`, which holds `granted` bytes so far. A grant made ahead of need (`sharing`) takes
    /// at most half of what the reserve has free (at least 1 MiB), so that a nearly empty reserve
    /// is shared among the captures that run rather than taken by the first to ask.
    ///
    /// The reserve lock alone does not order a claim against a cut in flight (made under the
    /// size lock, its count cleared after the ftruncate): read between the two, the cut bytes
    /// would count twice and the reserve look that much emptier than it is (a capture told
    /// "empty" ends `storageFull` with space left). The cutter records its cut in its slot
    /// before the ftruncate, with the reserve's size before, so the claim tells from the size
    /// it reads whether the bytes are still there (`ReserveClaims.Totals.held(reserveSize:)`)
    /// and waits for no cut: with online discard a cut takes seconds, and near an empty
    /// reserve the claims queued behind them (issue 44). Only a size that neither side of the
    /// recorded cut explains (a slot written by other hands) makes it read again under the
    /// size lock, where no cut is in flight.
    /// - Returns: the bytes claimed (0 when the reserve has none free); the bytes the reserve
    ///   still has free after them, claims in flight counted out (`GrantLead`'s room); whether the claim
    ///   waited for the size lock, behind every cut in flight (`GrantTimings.claimsBehindCuts`);
    ///   and the nanoseconds it spent holding the reserve lock (`GrantTimings.claimHeld`): the
    ///   rest of its time was the locks' waits.
    /// - Throws: `.invariantViolated` when `data` is not `granted` bytes long; `.busy` when the
    ///   reserve lock or the size lock stayed taken for 30 s or every claim slot is taken;
    ///   `.ioError` or `.corruptState` when the claims cannot be read or recorded (nothing is
    ///   claimed).
    func claim(_ bytes: Int64, for data: FileDescriptor, granted: Int64, sharing: Bool) throws
        -> (bytes: Int64, room: Int64, behindCuts: Bool, heldNanoseconds: UInt64) {
        var held: UInt64 = 0
        func timed(sizeLockHeld: Bool) throws -> (amount: Int64, room: Int64)? {
            let start = MonotonicTime.now()
            defer { held += MonotonicTime.now() - start }
            return try claim(bytes, for: data, granted: granted, sharing: sharing, sizeLockHeld: sizeLockHeld)
        }
        if let claimed = try lock.withReserve({ try timed(sizeLockHeld: false) }) {
            return (claimed.amount, claimed.room, false, held)
        }
        let claimed = try lock.withReserveSize { try lock.withReserve { try timed(sizeLockHeld: true) } }
        return (claimed?.amount ?? 0, claimed?.room ?? 0, true, held)
    }

    /// A claim under the reserve lock, and the room left after it; nil when the reserve's size
    /// and the recorded cut in flight do not agree (`sizeLockHeld` false).
    private func claim(_ bytes: Int64, for data: FileDescriptor, granted: Int64, sharing: Bool,
                       sizeLockHeld: Bool) throws -> (amount: Int64, room: Int64)? {
        // A grant from anywhere but the file's end would count bytes the file already has.
        let facts = try data.facts()
        let size = Int64(facts.size)
        guard size == granted else {
            throw ProVideoError(.invariantViolated, "a grant from offset \(granted) of \(data.path), whose size is "
                                + "\(size)", path: data.path)
        }
        let claims = try lock.claims.all(reserve.calls)
        let reserveSize = try reserve.size()
        // Under the size lock no cut is in flight: a recorded one that does not agree is counted
        // whole (short, never over).
        guard let held = claims.held(reserveSize: reserveSize) ?? (sizeLockHeld ? claims.total : nil) else { return nil }
        let available = reserveSize - held
        guard available > 0 else { return (0, 0) }
        let share = sharing ? max(available / 2, min(available, 1 << 20)) : available
        let amount = max(min(bytes, share) / reserve.unit * reserve.unit, min(available, reserve.unit))
        guard amount > 0 else { return (0, available) }
        try lock.claims.claim(amount, inode: facts.inode, end: granted + amount, reserve.calls)
        return (amount, available - amount)
    }

    /// Step 2: allocates the `amount` bytes claimed in the capture's file, from `granted`.
    /// - Returns: whether the reserve still holds them (`cut` must follow); false when the
    ///   filesystem was too full and the reserve gave them up first.
    /// - Throws: `.ioError`, `.notEnoughSpace`: the capture's file is as it was and the claim
    ///   is released (the reserve is whole, or the error says what it lacks).
    func allocate(_ amount: Int64, to data: FileDescriptor, granted: Int64) throws -> Bool {
        let calls = reserve.calls
        if let exchange = reserve.exchange, exchange.isOn, try exchangeIn(amount, to: data, granted: granted, exchange) {
            return false
        }
        let rc = calls.fallocate(data.rawValue, false, granted, amount)
        if rc == -ENOSPC || rc == -EDQUOT {
            try allocateFromTheReserve(amount, to: data, granted: granted,
                                       after: ProVideoError.system("fallocate", errno: -rc, path: data.path))
            return false
        }
        if rc < 0 {
            throw Rollback.keepingFirst(ProVideoError.system("fallocate", errno: -rc, path: data.path),
                                        restoring: "the capture's file's size (\(granted) bytes) and the reserve's claim") {
                try rollBack(data, to: granted)
                try lock.withReserve { try lock.claims.endClaim(allocated: false, calls) }
            }
        }
        CrashPoint.hit("grant.allocated")
        try lock.withReserve { try lock.claims.endClaim(allocated: true, calls) }
        return true
    }

    /// Step 3: cuts `amount` allocated bytes from the reserve and clears their claim.
    /// `beginning(reserveBefore)` is called once the reserve's size is read and nobody else
    /// can change it, before the cut; `ended()` once the claim is cleared (or the cut failed).
    /// - Throws: ftruncate's or the claim's error (a cut whose claim could not be cleared is
    ///   undone); `.busy` when the size lock stayed taken for 30 s. The claim then stays: the
    ///   bytes count as taken until the cut is made or this lock file description is closed
    ///   (`Pool.repair(control:)` then cuts them).
    func cut(_ amount: Int64, beginning: (_ reserveBefore: Int64) -> Void = { _ in }, ended: () -> Void = {}) throws {
        try lock.withReserveSize {
            let size = try reserve.size()
            guard size >= amount else {
                throw ProVideoError(.invariantViolated, "a cut of \(amount) bytes from a reserve of \(size) bytes",
                                    path: reserve.path)
            }
            beginning(size)
            defer { ended() }
            let reserveFD = try reserve.open(nocow: false)
            try lock.withReserve { try lock.claims.beginCut(amount, from: size, reserve.calls) }
            do {
                try reserveFD.truncate(size - amount, reserve.calls)
            } catch {
                throw Rollback.keepingFirst(error, restoring: "the record of the cut in flight") {
                    try lock.withReserve { try lock.claims.clearCut(0, reserve.calls) }
                }
            }
            do {
                try lock.withReserve { try lock.claims.clearCut(amount, reserve.calls) }
            } catch {
                // A cut reserve beside a claim that still stands would count the bytes as missing
                // from it (a give-back would grow it past the capacity): the cut is undone.
                throw Rollback.keepingFirst(error, restoring: "the \(amount) bytes cut from the reserve while their claim "
                                            + "stood (the reserve holds them twice until `Pool.repair`)") {
                    try reserve.grow(reserveFD, from: size - amount, to: size)
                }
            }
        }
    }

    /// Steps 2 and 3 by extent exchange: the reserve's last `amount` bytes become the capture's
    /// file's `[granted, granted + amount)`, and the reserve is cut by as much, under the size
    /// lock (the reserve's tail must not move between the exchange and the cut; both take well
    /// under a millisecond, but the exchange first waits for the capture's direct writes in
    /// flight, as a fallocate does). A kill between them (`grant.allocated`) leaves the reserve
    /// with a hole for a tail and the capture's file holding its blocks: the next salvage cuts
    /// the hole first (`Reserve.cutUnmappedTail`), exact to the byte. (A grant of a capture still
    /// running elsewhere that comes before that salvage takes the hole for its own: its writes
    /// there allocate, and `check` names its file as not mapped up to its size.)
    /// - Returns: true when made (the claim is ended, nothing to cut); false when the filesystem
    ///   refused the exchange: `exchange` is turned off, the capture's file and the claim are as
    ///   they were, and the caller falls back to fallocate.
    /// - Throws: ftruncate's or the claim's error, after undoing what was done; `.busy` when the
    ///   size lock stayed taken for 30 s.
    private func exchangeIn(_ amount: Int64, to data: FileDescriptor, granted: Int64, _ exchange: ExtentExchange) throws -> Bool {
        let calls = reserve.calls
        return try lock.withReserveSize {
            let size = try reserve.size()
            guard size >= amount else {
                throw ProVideoError(.invariantViolated, "an exchange of \(amount) bytes from a reserve of \(size) bytes",
                                    path: reserve.path)
            }
            let reserveFD = try reserve.open(nocow: false)
            // The exchange needs the range inside both files: the capture's file gets it as a
            // hole, which allocates nothing.
            try data.truncate(granted + amount, calls)
            do {
                try lock.withReserve { try lock.claims.beginCut(amount, from: size, calls) }
            } catch {
                throw Rollback.keepingFirst(error, restoring: "the capture's file's size (\(granted) bytes)") {
                    try data.truncate(granted, calls)
                }
            }
            let rc = calls.exchangeRange(data.rawValue, reserveFD.rawValue, size - amount, granted, amount)
            if rc < 0 {
                try data.truncate(granted, calls)
                try lock.withReserve { try lock.claims.clearCut(0, calls) }
                exchange.refused(errno: -rc, path: data.path)
                return false
            }
            CrashPoint.hit("grant.allocated")
            do {
                try reserveFD.truncate(size - amount, calls)
            } catch {
                // The reserve's tail must not stay a hole that the next grant would exchange:
                // the blocks go back where they were.
                throw Rollback.keepingFirst(error, restoring: "the reserve's last \(amount) bytes and the capture's file") {
                    let back = calls.exchangeRange(data.rawValue, reserveFD.rawValue, size - amount, granted, amount)
                    if back < 0 { throw ProVideoError.system("ioctl(XFS_IOC_EXCHANGE_RANGE)", errno: -back, path: data.path) }
                    try data.truncate(granted, calls)
                    try lock.withReserve { try lock.claims.endClaim(allocated: false, cutEnded: true, calls) }
                }
            }
            try lock.withReserve { try lock.claims.endClaim(allocated: false, cutEnded: true, calls) }
            return true
        }
    }

    /// A filesystem too full for the claimed bytes beside the reserve: the reserve gives them
    /// up, then the capture's file takes them, under the size lock so that no give-back counts
    /// them as missing meanwhile.
    private func allocateFromTheReserve(_ amount: Int64, to data: FileDescriptor, granted: Int64,
                                        after full: ProVideoError) throws {
        let calls = reserve.calls
        do { try rollBack(data, to: granted) } catch {
            throw Rollback.keepingFirst(full, restoring: "the capture's file's size (\(granted) bytes) and the reserve's claim") {
                try lock.withReserve { try lock.claims.endClaim(allocated: false, calls) }
                throw error
            }
        }
        try lock.withReserveSize {
            let reserveFD: FileDescriptor, size: Int64
            do {
                size = try reserve.size()
                reserveFD = try reserve.open(nocow: false)
                try lock.withReserve { try lock.claims.beginCut(amount, from: size, calls) }
                try reserveFD.truncate(size - amount, calls)
            } catch {
                throw Rollback.keepingFirst(error, restoring: "the reserve's claim") {
                    try lock.withReserve { try lock.claims.endClaim(allocated: false, cutEnded: true, calls) }
                }
            }
            try lock.withReserve { try lock.claims.endClaim(allocated: false, cutEnded: true, calls) }
            let rc = calls.fallocate(data.rawValue, false, granted, amount)
            if rc < 0 {
                // The reserve gave `amount` up for nothing: it grows back, or the error says
                // the pool is that much short (a replenish restores it).
                throw Rollback.keepingFirst(ProVideoError.system("fallocate", errno: -rc, path: data.path),
                                            restoring: "the capture's file and \(amount) bytes of the reserve",
                                            remedy: .replenish) {
                    try rollBack(data, to: granted)
                    try reserve.grow(reserveFD, from: size - amount, to: size)
                }
            }
        }
    }

    /// Puts the capture's file back to `size` bytes, freeing blocks a failed fallocate kept.
    private func rollBack(_ data: FileDescriptor, to size: Int64) throws {
        try Reserve(path: data.path, calls: reserve.calls, access: reserve.access, unit: reserve.unit,
                    blockSize: reserve.blockSize, isBtrfs: reserve.isBtrfs).rollBack(data, to: size)
    }
}

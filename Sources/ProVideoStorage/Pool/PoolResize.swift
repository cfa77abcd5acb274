import FoundationEssentials
import ProVideoSystem

/// Changes of the pool's capacity: a resize, and a replenish that restores the reserve.
extension Pool {
    /// Sets `initialCapacity` to `capacity` bytes (rounded up to the allocation unit) and
    /// grows or shrinks the reserve to it, less what the captures kept in the pool hold (their
    /// grants stay theirs: reserve + grants ≤ capacity, `CapacityAccount.reserveLimit`). Busy
    /// reason `adjustingCapacity` while it runs; refused while a capture runs (a capture
    /// cannot start while it runs).
    /// - Returns: the new capacity in bytes.
    /// - Throws: `.busy`; `.notEnoughSpace` with the missing bytes, the reserve left exactly as
    ///   it was; `.invalidArgument` for a capacity ≤ 0, above `maximumCapacity`, or below what
    ///   kept captures hold; `.corruptState` naming a kept capture whose grant cannot be counted.
    @discardableResult
    public func resize(to capacity: Int64) throws -> Int64 {
        try Self.requireValidCapacity(capacity)
        return try whileBusy(.adjustingCapacity, action: "resize the pool") { try lock.withReserveSize {
            let reserve = reserve(layout.reserve)
            let target = reserve.rounded(capacity)
            var account = try lock.withReserve { try capacityAccount(reserve) }
            account.initialCapacity = target
            let kept = try account.held
            guard kept <= target else {
                throw ProVideoError(.invalidArgument, "cannot resize the pool to \(target) bytes: captures kept in it hold "
                                    + "\(kept) bytes of grants; resize to at least that, or recover them first",
                                    path: path, remedies: [.recover])
            }
            let limit = try account.reserveLimit
            let current = account.reserve
            let previous = configuration
            let fd = try reserve.open(create: true, nocow: configuration.storage.isBtrfs)
            if limit < current {
                // A shrink frees the space first, so it works on a full filesystem (recording the
                // capacity needs a block); killed before the record, the reserve is smaller than
                // the capacity, which is normal (`replenish` grows it).
                try fd.truncate(limit, calls)
                try fd.sync(calls)
            } else if limit > current {
                try reserve.requireSpace(limit - current, reaching: limit)
            }
            // A grow records the capacity first: killed afterwards, the reserve is either still
            // the old size or already the new one, and `repair(control:)` cuts a reserve larger than
            // the capacity.
            configuration.initialCapacity = target
            do {
                try configuration.save(layout.configuration, calls, access: access)
                if limit > current { try reserve.grow(fd, from: current, to: limit) }
            } catch {
                configuration = previous
                throw Rollback.keepingFirst(error, restoring: "the recorded capacity (\(previous.initialCapacity) bytes, "
                                            + "in \(layout.configuration))") {
                    try configuration.save(layout.configuration, calls, access: access)
                }
            }
            CrashPoint.hit("resize.allocated")
            return target
        } }
    }

    /// Restores the reserve toward `initialCapacity` from the filesystem's free space, best
    /// effort: it may add less than was missing, and the result says so. Busy reason
    /// `replenishing` while it runs. It runs beside running captures and never takes what they
    /// were granted: the reserve grows to `initialCapacity` less their grants.
    /// - Throws: `.notEnoughSpace` when it could add nothing; `.busy` (a resize or another
    ///   replenish is running).
    @discardableResult
    public func replenish() throws -> ReplenishResult {
        try whileBusy(.replenishing, action: "replenish the pool", besideCaptures: true) {
            let (added, missing) = try lock.withReserveSize {
                let reserve = reserve(layout.reserve)
                let wanted = try lock.withReserve { try capacityAccount(reserve).missing }
                let added = try reserve.refill(by: wanted)
                return (added, max(wanted - added, 0))
            }
            CrashPoint.hit("replenish.allocated")
            return ReplenishResult(added: added, missing: missing, remainingCapacity: try remainingCapacity)
        }
    }
}

/// The outcome of `Pool.replenish()`, in bytes.
public struct ReplenishResult: Codable, Sendable, Equatable {
    /// Bytes added to the reserve.
    public var added: Int64
    /// Bytes still missing to reach `initialCapacity` (0 when fully restored).
    public var missing: Int64
    /// The pool's remaining capacity afterwards.
    public var remainingCapacity: Int64
}

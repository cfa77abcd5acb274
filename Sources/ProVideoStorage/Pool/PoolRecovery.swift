import ProVideoSystem

/// What opening a pool recovered, as a value (`Pool.salvage(at:)`, `Pool.recover(at:progress:)`): the recordings salvaged
/// from captures whose recorder died, the captures discarded because nothing of them was
/// committed, those that could not be salvaged and why, and a repair that could not finish.
public struct PoolRecovery: Sendable {
    /// The pool, open.
    public let pool: Pool
    /// Recordings salvaged from captures whose recorder had died, at their destinations (or
    /// held in the pool when those were taken).
    public let salvaged: [SalvagedRecording]
    /// Captures of dead recorders with nothing committed: no file was made for them.
    public let discarded: [DiscardedCapture]
    /// Captures left as they are because their files in the pool are not what the pool made
    /// (a link, another file type, a hard link); each error names the file.
    public let unsalvageable: [ProVideoError]
    /// Why the repair of what a killed process left could not finish (a full filesystem); nil
    /// when the pool is repaired.
    public let repairFailure: ProVideoError?
}

extension Pool {
    /// Opens the pool at `path` and salvages every capture whose recorder died, as `provideo
    /// recover` does; the synchronous spelling of `recover(at:progress:)`, named apart so that
    /// `try await` code never picks one for the other.
    /// - Parameter path: the pool's directory; nil: `PROVIDEO_POOL`, else `defaultPath`.
    /// - Returns: what it recovered, and the open pool. It waits for another process's change
    ///   of the pool (a move's copy, a resize) to end: an empty result is proof that nothing
    ///   was left to salvage, never a salvage skipped.
    /// - Throws: as `open(at:)`; `.busy` when another process kept changing the pool for 30 s.
    public static func salvage(at path: String? = nil) throws -> PoolRecovery { try salvage(at: path, control: .none) }

    /// `salvage(at:)`, with a control that gets the progress of a salvaged take's copy to
    /// another filesystem.
    package static func salvage(at path: String?, control: OperationControl) throws -> PoolRecovery {
        let pool = try open(at: path, systemCalls: .live, salvaging: true, waitingForTheLock: true, control: control)
        return PoolRecovery(pool: pool, salvaged: pool.salvaged, discarded: pool.discarded,
                            unsalvageable: pool.unsalvageable, repairFailure: pool.repairFailure)
    }
}

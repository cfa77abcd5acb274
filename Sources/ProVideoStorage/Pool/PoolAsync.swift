import ProVideoSystem

/// The long pool operations as `async` functions. Each runs on a thread of its own
/// (`OffThread`), never on the caller's task or actor, and reports progress to an optional
/// `ProVideoProgress` handler on that thread. Cancellation is honoured only where stopping
/// leaves the pool as if the operation had not run; Docs/SWIFT-API.md lists where it is not.
extension Pool {
    /// Creates a pool, as the synchronous
    /// `create(at:capacity:zeroFill:group:maxCaptures:bandwidth:progress:)` does, on a thread
    /// of its own: zero-filling a large reserve takes minutes.
    /// - Parameters:
    ///   - path: the pool's directory (created if missing; its parent must exist).
    ///   - capacity: the reserve's size in bytes, rounded up to the allocation unit.
    ///   - zeroFill: also write the reserve once with zeros.
    ///   - group: the group whose members may use the pool; nil: this process's group.
    ///   - maxCaptures: how many captures may run at once; nil: no limit.
    ///   - bandwidth: the write bandwidth captures are admitted against, in bits per second;
    ///     nil: measured when `measuringBandwidth`, else no admission.
    ///   - measuringBandwidth: measure the pool's bandwidth once it is made, when no
    ///     `bandwidth` is given (as the synchronous `create`).
    ///   - progress: bytes zero-filled of the capacity (only with `zeroFill`).
    /// - Returns: the open pool, which may be shared between tasks.
    /// - Throws: as the synchronous `create`; `.cancelled` when the task was cancelled while
    ///   the reserve was being zero-filled (checked every 8 MiB): nothing of the pool is left.
    public static func create(at path: String, capacity: Int64, zeroFill: Bool = false, group: String? = nil,
                              maxCaptures: Int? = nil, bandwidth: Int64? = nil, measuringBandwidth: Bool = true,
                              progress: ProVideoProgress? = nil) async throws -> Pool {
        try await create(at: path, capacity: capacity, zeroFill: zeroFill, group: group, maxCaptures: maxCaptures,
                         bandwidth: bandwidth, measuringBandwidth: measuringBandwidth, progress: progress,
                         systemCalls: .live)
    }

    /// `create(at:capacity:zeroFill:group:maxCaptures:bandwidth:measuringBandwidth:progress:)
    /// async` with system calls a test swapped.
    package static func create(at path: String, capacity: Int64, zeroFill: Bool = false, group: String? = nil,
                               maxCaptures: Int? = nil, bandwidth: Int64? = nil, measuringBandwidth: Bool = false,
                               progress: ProVideoProgress?, systemCalls: SystemCalls) async throws -> Pool {
        try await OffThread.run("provideo-create", cancellable: true, progress: progress) { control in
            let pool = try create(at: path, capacity: capacity, zeroFill: zeroFill, group: group, maxCaptures: maxCaptures,
                                  bandwidth: bandwidth, progress: progress, control: control, systemCalls: systemCalls)
            if bandwidth == nil && measuringBandwidth { _ = try pool.measureAndRecordBandwidth() }
            return pool
        }
    }

    /// Opens the pool at `path` and salvages every capture whose recorder died, as `provideo
    /// recover` does; see the synchronous `salvage(at:)`.
    /// - Parameters:
    ///   - path: the pool's directory; nil: `PROVIDEO_POOL`, else `defaultPath`.
    ///   - progress: bytes of a salvaged recording copied to another filesystem.
    /// - Throws: as `open(at:)`. Cancellation is ignored: a salvage, once started, runs to its
    ///   end (an interrupted one would only be redone by the next open).
    public static func recover(at path: String? = nil, progress: ProVideoProgress? = nil) async throws -> PoolRecovery {
        try await OffThread.run("provideo-recover", cancellable: false, progress: progress) { control in
            try salvage(at: path, control: control)
        }
    }

    /// Restores the reserve toward `initialCapacity`, best effort (Apple:
    /// `replenishCapacity()`); see the synchronous `replenish()` for the rules. Busy
    /// reason `replenishing` while it runs.
    /// - Returns: the remaining capacity after it, in bytes (as Apple's completion handler
    ///   gets it: "the new size", which may be less than `initialCapacity`).
    /// - Throws: `.notEnoughSpace` when the filesystem could not take a single byte more;
    ///   `.busy`; `.cancelled` when the task was cancelled before it started. Once it started
    ///   it runs to its end (a grant from the filesystem is one fallocate(2)).
    public func replenishCapacity() async throws -> Int {
        try checkNotCancelled("the replenish")
        return try await OffThread.run("provideo-replenish", cancellable: false, progress: nil) { _ in
            Int(try self.replenish().remainingCapacity)
        }
    }

    /// Sets `initialCapacity` and grows or shrinks the reserve; see the synchronous
    /// `resize(to:)`. Busy reason `adjustingCapacity` while it runs.
    /// - Parameters:
    ///   - capacity: the new `initialCapacity` in bytes, rounded up to the allocation unit.
    ///   - progress: called with (0, bytes to add or remove) before and with both equal after:
    ///     a resize is one fallocate(2) or ftruncate(2), with nothing to count between.
    /// - Returns: the new capacity in bytes.
    /// - Throws: as `resize(to:)`; `.cancelled` when the task was cancelled before it started.
    ///   Once it started it runs to its end.
    @discardableResult
    public func resize(to capacity: Int64, progress: ProVideoProgress? = nil) async throws -> Int64 {
        try checkNotCancelled("the resize")
        return try await OffThread.run("provideo-resize", cancellable: false, progress: progress) { _ in
            let change = abs(capacity - (try self.initialCapacity))
            progress?(0, change)
            let resized: Int64 = try self.resize(to: capacity)
            progress?(change, change)
            return resized
        }
    }

    /// Moves a recording the pool holds to `destination`; see the synchronous
    /// `moveHeldRecording(_:to:)`.
    /// - Parameters:
    ///   - held: the recording's path in the pool's `recordings/` (see `listing()`).
    ///   - destination: where it goes; nil: the destination it was recorded for.
    ///   - progress: a copy to another filesystem reports its copy pass, then its two
    ///     verification passes (the recording, then the copy), each from 0 to the recording's
    ///     length in bytes. A rename reports nothing.
    /// - Returns: the path the recording now has.
    /// - Throws: as `moveHeldRecording(_:to:)`; `.cancelled` when the task was cancelled
    ///   during the copy or its verification: nothing is left at the destination and the
    ///   recording stays held, to be moved again. A cancellation after the copy's final rename
    ///   is ignored (the move is done).
    @discardableResult
    public func moveHeldRecording(_ held: String, to destination: String? = nil,
                                  progress: ProVideoProgress? = nil) async throws -> String {
        try await OffThread.run("provideo-move", cancellable: true, progress: progress) { control in
            let moved: String = try self.moveHeldRecording(held, to: destination, control: control)
            return moved
        }
    }

    /// - Throws: `.cancelled` when the current task is cancelled.
    func checkNotCancelled(_ operation: String) throws {
        if Task.isCancelled { throw ProVideoError(.cancelled, "cancelled: \(operation) did not start", path: path) }
    }
}

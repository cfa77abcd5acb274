import ProVideoSystem

/// The pool's landing, wired: `Landing` is a value handed what it needs; these are the pool's
/// spellings of it for the tools.
extension Pool {
    var landing: Landing {
        Landing(layout: layout, access: access, calls: calls, held: { try self.heldRecordings() },
                replenish: { _ = try self.replenish() })
    }

    /// The recordings waiting to land, in name order, with their progress (`Landing.progress`).
    package func landings() throws -> [LandingProgress] { try landing.progress() }

    /// Lands the recordings waiting to land (`Landing.land`, which says how and what it throws).
    package func landPending(parallel: Int = 1, rate: Int64? = nil, dueOnly: Bool = false, retryAfter: Double = 5,
                            shouldStop: @escaping @Sendable () -> Bool = { false },
                            observer: LandingObserver? = nil, fleet: FleetSlots? = nil) throws -> [LandingResult] {
        try landing.land(parallel: parallel, rate: rate, dueOnly: dueOnly, retryAfter: retryAfter, shouldStop: shouldStop,
                         observer: observer, fleet: fleet)
    }
}

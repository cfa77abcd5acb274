import ProVideoStorage

/// A sizing trial's grants, every stream's together (`GrantTimings`): each step's latency, and
/// how far ahead of the write head the grants landed, as stream time. Nanoseconds.
package struct GrantSummary: Codable, Sendable, Equatable {
    package var grants: UInt64
    /// The claim (the reserve lock's wait, its reads, its slot's write).
    package var claimNs: LatencySummary
    /// The claim's time holding the reserve lock (the rest was the locks' waits).
    package var claimHeldNs: LatencySummary
    /// Claims that waited behind the cuts in flight (near an empty reserve).
    package var claimsBehindCuts: Int64
    /// The capture's fallocate.
    package var allocateNs: LatencySummary
    /// The reserve's cut, off the grant's path.
    package var cutNs: LatencySummary
    /// The lead at landing: its median, and the shortest 1 % and the shortest of all.
    package var leadP50Ns: UInt64
    package var leadP1Ns: UInt64
    package var leadMinimumNs: UInt64
    /// Grants that landed after the recorder had asked past the granted end.
    package var late: Int64

    package init(_ timings: GrantTimings) {
        grants = timings.allocate.count
        claimNs = timings.claim.summary
        claimHeldNs = timings.claimHeld.summary
        claimsBehindCuts = timings.claimsBehindCuts
        allocateNs = timings.allocate.summary
        cutNs = timings.cut.summary
        leadP50Ns = timings.leadAtLanding.percentile(0.5)
        leadP1Ns = timings.leadAtLanding.percentile(0.01)
        leadMinimumNs = timings.leadAtLanding.percentile(0)
        late = timings.late
    }

    /// One line of a trial's log: "grants 40: claim p50 0.1 ms p99 0.3 ms max 0.4 ms (held p50 …), ...".
    package var line: String {
        func steps(_ summary: LatencySummary) -> String {
            "p50 \(Sizing.milliseconds(summary.p50)) p99 \(Sizing.milliseconds(summary.p99)) max \(Sizing.milliseconds(summary.max))"
        }
        return "grants \(grants): claim \(steps(claimNs)) (held \(steps(claimHeldNs)); \(claimsBehindCuts) behind cuts); fallocate \(steps(allocateNs)); cut \(steps(cutNs)); "
            + "lead at landing p50 \(Sizing.milliseconds(leadP50Ns)), p1 \(Sizing.milliseconds(leadP1Ns)), "
            + "least \(Sizing.milliseconds(leadMinimumNs)); \(late) late"
    }
}

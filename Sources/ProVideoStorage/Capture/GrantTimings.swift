
/// How long a capture's grants took, step by step, and how far ahead of its write head each
/// one landed: what `provideo-bench size` tabulates per stream count (issue 44). Every
/// histogram is in nanoseconds.
package struct GrantTimings: Sendable {
    /// Step 1, the claim (`ReserveGrants.claim`): the reserve lock's wait (and the size lock's,
    /// near an empty reserve), its reads and its slot's pwrite.
    package var claim = LatencyHistogram()
    /// The part of each claim spent holding the reserve lock: its reads and its slot's pwrite.
    /// A claim long beside a short hold waited for the lock; a long hold is the claim's own I/O
    /// (on `pool.lock`), which every other claim then waits behind.
    package var claimHeld = LatencyHistogram()
    /// Claims that found less free than they asked while allocated bytes awaited their cut, and
    /// so waited for the size lock, behind every cut in flight: the part of `claim`'s tail
    /// that is the cuts', not the reserve lock's.
    package var claimsBehindCuts: Int64 = 0
    /// Step 2, the capture's fallocate of the claimed bytes (`ReserveGrants.allocate`), which on
    /// ext4 waits for the capture's writes in flight.
    package var allocate = LatencyHistogram()
    /// Step 3, the cutter's cut of the reserve (`ReserveGrants.cut`), the size lock's wait
    /// included; it delays no grant, only the reserve's figure.
    package var cut = LatencyHistogram()
    /// The stream the capture held granted ahead of its write head when each grant's bytes
    /// landed, as time at its declared bitrate; 0 for a grant that landed late.
    package var leadAtLanding = LatencyHistogram()
    /// Grants that landed after the recorder had asked for bytes past the end granted before
    /// them: it had run out of granted bytes, and waited or was refused.
    package var late: Int64 = 0

    package init() {}

    /// The stream time `bytes` last at `bitrate` (bits per second), in nanoseconds; 0 for no
    /// bytes, the largest value for no bitrate.
    static func streamTime(_ bytes: Int64, bitrate: Int64) -> UInt64 {
        guard bytes > 0 else { return 0 }
        guard bitrate > 0 else { return .max }
        let nanoseconds = Double(bytes) * 8 * 1e9 / Double(bitrate)
        return nanoseconds >= Double(UInt64.max) ? .max : UInt64(nanoseconds)
    }

    /// Adds every sample of `other`: the captures of a run, together.
    package mutating func merge(_ other: GrantTimings) {
        claim.merge(other.claim)
        claimHeld.merge(other.claimHeld)
        allocate.merge(other.allocate)
        cut.merge(other.cut)
        leadAtLanding.merge(other.leadAtLanding)
        late += other.late
        claimsBehindCuts += other.claimsBehindCuts
    }
}

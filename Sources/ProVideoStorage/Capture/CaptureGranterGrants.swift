import ProVideoSystem

extension CaptureGranter {
    /// What the recorder's thread sees of the grants.
    struct Grants {
        /// The bytes granted so far: the capture may write below this offset.
        var granted: Int64
        /// The last grant the thread tried found the reserve empty.
        var reserveEmpty: Bool
        /// The thread has tried a grant since the ask in question: `reserveEmpty` answers that
        /// ask, not an older one (a replenish may have refilled the reserve since).
        var answered: Bool
        /// The error that stopped the thread's grants (`.ioError`, `.invariantViolated`).
        var failure: ProVideoError?
        /// The bytes per grant the thread uses now (the configured step, grown after slow
        /// grants).
        var step: Int64
        /// The bytes the thread keeps granted ahead of the head (`GrantLead.ask`): it grants
        /// when less is left.
        var lead: Int64
    }
}

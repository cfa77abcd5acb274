import ProVideoSystem

/// What a `Pool` keeps in memory and may change after it is opened, kept in one `Mutex`
/// (`Pool.state`) so that a pool shared between threads never reads a value half-written.
struct PoolState: Sendable {
    var configuration: PoolConfiguration
    var salvaged: [SalvagedRecording] = []
    var discarded: [DiscardedCapture] = []
    var repairFailure: ProVideoError?
    var unsalvageable: [ProVideoError] = []
}

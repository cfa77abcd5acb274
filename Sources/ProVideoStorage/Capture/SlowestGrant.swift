import Synchronization

/// The slowest grant (claim and fallocate, `CaptureGranter`) that the captures of one `Pool`
/// made in the last `window`, in nanoseconds: what their `GrantLead` is sized from. Shared, so
/// that a grant one capture found slow (a journal held by a neighbour's fsync slows every
/// capture's fallocate on the filesystem) lengthens every capture's lead before its own next
/// grant, not after it (issue 44: the confirmations' drops came at the first slow grant).
/// Forgotten after `window`, so one stall does not hold the pool's leads long for the rest of
/// the day. Used by granter threads only, never by a recorder's.
final class SlowestGrant: Sendable {
    /// How long a slow grant counts, in nanoseconds.
    static let window: UInt64 = 60_000_000_000

    private let latest = Mutex<(took: UInt64, at: UInt64)?>(nil)

    init() {}

    /// Records a grant that took `took` nanoseconds, ended at `at` (`MonotonicTime`).
    func record(_ took: UInt64, at: UInt64) {
        latest.withLock { slowest in
            if let current = slowest, at < current.at + Self.window, current.took >= took { return }
            slowest = (took, at)
        }
    }

    /// The slowest grant recorded in the `window` before `now` (`MonotonicTime`); 0 when none.
    func slowest(now: UInt64) -> UInt64 {
        latest.withLock { slowest in
            guard let slowest, now < slowest.at + Self.window else { return 0 }
            return slowest.took
        }
    }
}

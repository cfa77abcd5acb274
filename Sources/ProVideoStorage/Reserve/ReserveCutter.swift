import FoundationEssentials
import ProVideoSystem

/// Makes a capture's grants' third step (`ReserveGrants.cut`) on a thread of its own, so that
/// the cut never delays the capture's next grant: a cut frees blocks, which on a `discard`
/// mount waits for the device (55–716 ms for 210 MiB on ext4 beside a writer), and it waits
/// for the size lock, which other captures' cuts and give-backs hold. Amounts handed in while a
/// cut runs are cut as one. Until its cut, an amount stays claimed (`ReserveClaims`), so every
/// figure counts it once.
///
/// `@unchecked Sendable`: every `var` is read and written only with `condition` locked.
final class ReserveCutter: @unchecked Sendable {
    private let grants: ReserveGrants
    private let beginning: (_ reserveBefore: Int64, _ amount: Int64) -> Void
    private let ended: (_ amount: Int64, _ cut: Bool, _ nanoseconds: UInt64) -> Void
    private let condition = MonotonicCondition()
    /// Bytes handed in and not yet cut, the one cut in progress included.
    private var pending: Int64 = 0
    private var stopping = false
    private var giveUpAt: UInt64 = .max
    private var exited = false

    /// How long a failed cut is left before it is tried again, in nanoseconds.
    private static let retryDelay: UInt64 = 1_000_000_000

    /// - Parameters:
    ///   - beginning: called with the size lock held, before each cut: the reserve is
    ///     `reserveBefore` until the cut, then `reserveBefore − amount`, and nobody else changes it.
    ///   - ended: called after each cut with its amount, whether it was made (the claim is then
    ///     cleared) and how long it took, the size lock's wait included; a failed cut is tried
    ///     again after a second.
    /// - Throws: `.ioError` when its thread cannot be started (pthread_create(3)).
    init(grants: ReserveGrants, beginning: @escaping (_ reserveBefore: Int64, _ amount: Int64) -> Void,
         ended: @escaping (_ amount: Int64, _ cut: Bool, _ nanoseconds: UInt64) -> Void) throws {
        self.grants = grants
        self.beginning = beginning
        self.ended = ended
        try DetachedThread.start(name: "provideo-cutter") { [self] in run() }
    }

    /// Hands in `amount` allocated bytes to cut; never waits for a cut.
    func cut(_ amount: Int64) {
        condition.lock()
        pending += amount
        condition.unlock()
        condition.signal()
    }

    /// Cuts what was handed in, then stops the thread, waiting until `deadline`
    /// (`MonotonicTime`) at most.
    /// - Returns: the bytes left uncut (0 unless cuts failed until the deadline): they stay
    ///   claimed until this lock file description closes, and `Pool.repair(control:)` cuts them.
    func finish(until deadline: UInt64) -> Int64 {
        condition.lock()
        defer { condition.unlock() }
        stopping = true
        giveUpAt = deadline
        condition.broadcast()
        while !exited, condition.wait(until: deadline) {}
        return pending
    }

    private func run() {
        condition.lock()
        while true {
            if pending == 0 || MonotonicTime.now() >= giveUpAt {
                if stopping { break }
                condition.wait(until: MonotonicTime.now() + Self.retryDelay)
                continue
            }
            let amount = pending
            condition.unlock()
            var made = false
            let started = MonotonicTime.now()
            do {
                try grants.cut(amount, beginning: { beginning($0, amount) }, ended: {})
                made = true
            } catch {
                // The claim stays: the bytes count as taken, never twice; the cut is tried again.
            }
            ended(amount, made, MonotonicTime.now() - started)
            condition.lock()
            if made {
                pending -= amount
            } else {
                condition.wait(until: min(MonotonicTime.now() + Self.retryDelay, giveUpAt))
            }
        }
        exited = true
        condition.unlock()
        condition.broadcast()
    }
}

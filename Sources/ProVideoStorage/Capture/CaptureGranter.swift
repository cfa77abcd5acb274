import Foundation

/// Keeps a capture's file granted ahead of its write head, on a thread of its own, so that the
/// recorder's thread never makes a grant unless this one fell behind (`grantNow`). The thread
/// grants `step` bytes whenever less than two steps are granted beyond the head, so the capture
/// holds two to three steps it has not written (less than three: the bound on the space it can
/// strand). Two steps ahead, four seconds of stream by default, because a grant's fallocate
/// waits for the filesystem's journal, which a neighbour's fsync of gigabytes of page cache can
/// hold for seconds (measured on this thread: grants of 250 MB took up to 2.1 s on ext4 beside
/// the bench's noise writer). When the reserve is empty it looks again every second (a
/// replenish or a finished capture may refill it).
///
/// `@unchecked Sendable`: `granted`, `head`, `stopping`, `exhaustedAt` and `failure` are read
/// and written only with `condition` locked; `grants` (the file descriptors and the pool lock
/// used for granting) is used only with `grantLock` locked, which also orders every grant
/// before `stop()` returns.
final class CaptureGranter: @unchecked Sendable {
    /// Bytes per grant, a multiple of the reserve's unit.
    let step: Int64
    private let grants: ReserveGrants
    private let data: FileDescriptor
    private let condition = NSCondition()
    private let grantLock = NSLock()
    private var granted: Int64
    private var head: Int64 = 0
    private var stopping = false
    private var exhaustedAt: UInt64?
    private var failure: ProVideoError?

    /// How long an empty reserve is left alone before the next look, in nanoseconds.
    private static let exhaustedRetry: UInt64 = 1_000_000_000

    /// - Parameters:
    ///   - data: the capture's file, opened for writing (a descriptor of the granter's own).
    ///   - granted: its size, the bytes granted so far.
    init(grants: ReserveGrants, data: FileDescriptor, granted: Int64, step: Int64) {
        self.grants = grants
        self.data = data
        self.granted = granted
        self.step = step
        let thread = Thread { [self] in run() }
        thread.name = "provideo-granter"
        thread.start()
    }

    /// The bytes granted so far: the capture may write below this offset.
    var grantedBytes: Int64 {
        condition.lock()
        defer { condition.unlock() }
        return granted
    }

    /// Runs `body` with the bytes granted while no grant of this capture is half made (its file
    /// grown, the reserve not yet cut, or the count not yet changed), so that `body` can add the
    /// reserve's size to them exactly. Waits at most 1 s for a grant in progress; past that,
    /// `body` runs anyway and may be off by that grant.
    func withoutGrantInProgress<T>(_ body: (Int64) throws -> T) rethrows -> T {
        let locked = grantLock.lock(before: Date(timeIntervalSinceNow: 1))
        defer { if locked { grantLock.unlock() } }
        return try body(grantedBytes)
    }

    /// Tells the thread the capture has appended up to `offset` bytes; wakes it when the
    /// lead has fallen below two steps. Returns the bytes granted so far.
    func advance(to offset: Int64) -> Int64 {
        condition.lock()
        defer { condition.unlock() }
        head = offset
        if granted - head < 2 * step { condition.signal() }
        return granted
    }

    /// Grants on the caller's thread until `needed` bytes are granted or the reserve is empty:
    /// for the rare frame that outruns the thread. Returns the bytes granted so far.
    /// - Throws: the thread's or this grant's error (`.ioError`, `.busy`).
    func grantNow(reaching needed: Int64) throws -> Int64 {
        grantLock.lock()
        defer { grantLock.unlock() }
        while true {
            condition.lock()
            let current = granted, stopped = stopping, failed = failure
            condition.unlock()
            if let failed { throw failed }
            guard current < needed, !stopped else { return current }
            let added = try grants.grant(max(step, needed - current), to: data, granted: current, sharing: false)
            condition.lock()
            granted += added
            if added == 0 { exhaustedAt = MonotonicTime.now() }
            condition.unlock()
            if added == 0 { return current }
        }
    }

    /// Stops granting; returns once no grant is in progress (a grant waits at most 30 s for
    /// the reserve lock), so the capture's file does not change after this. Returns the bytes
    /// granted.
    func stop() -> Int64 {
        condition.lock()
        stopping = true
        condition.signal()
        condition.unlock()
        grantLock.lock()
        defer { grantLock.unlock() }
        return grantedBytes
    }

    private func run() {
        condition.lock()
        while !stopping {
            let now = MonotonicTime.now()
            let resting = exhaustedAt.map { now < $0 + Self.exhaustedRetry } ?? false
            guard granted - head < 2 * step, !resting, failure == nil else {
                _ = condition.wait(until: Date(timeIntervalSinceNow: resting ? 0.25 : 1))
                continue
            }
            condition.unlock()
            grantLock.lock()
            var added: Int64 = 0
            var error: ProVideoError?
            let (from, stopped) = { condition.lock(); defer { condition.unlock() }; return (granted, stopping) }()
            if !stopped {
                do { added = try grants.grant(step, to: data, granted: from, sharing: true) } catch let failed as ProVideoError {
                    // The reserve lock stayed busy: try again later; anything else fails the grants.
                    if failed.code != .busy { error = failed }
                } catch {}
            }
            // `granted` changes before `grantLock` is released: a `grantNow` waiting for the lock
            // must grant from the file's new end, not over this grant.
            condition.lock()
            granted += added
            exhaustedAt = added == 0 && !stopped ? MonotonicTime.now() : nil
            if let error { failure = error }
            grantLock.unlock()
        }
        condition.unlock()
    }
}

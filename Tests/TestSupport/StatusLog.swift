import Foundation
import ProVideoStorage
import Synchronization

/// The statuses a `Pool.statusUpdates()` stream yielded, each with when it came (seconds on
/// the monotonic clock), gathered by one task and read by another.
package final class StatusLog: Sendable {
    private let entries = Mutex<[(at: Double, status: PoolStatus)]>([])
    private let end = Mutex<Double?>(nil)

    package init() {}

    package var statuses: [PoolStatus] { entries.withLock { $0.map(\.status) } }
    package var times: [Double] { entries.withLock { $0.map(\.at) } }
    /// When the stream ended (or `follow` stopped iterating it), on the same clock as `times`.
    package var endedAt: Double? { end.withLock { $0 } }

    /// Now, on the clock of `times` and `endedAt`, in seconds.
    package static var now: Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    /// Iterates `pool.statusUpdates()` into the log until `done` holds for the log's statuses
    /// or `seconds` pass (the stream is then ended by cancelling the iterating task). The
    /// iterating task runs on `ThreadExecutor.shared`, so the times it logs are when the
    /// stream yielded, however busy the cooperative pool is.
    package func follow(_ pool: Pool, seconds: Double, until done: @escaping @Sendable ([PoolStatus]) -> Bool) -> Task<Void, Never> {
        let follower = Task(executorPreference: ThreadExecutor.shared) { [self] in
            for await status in pool.statusUpdates() {
                entries.withLock { $0.append((Self.now, status)) }
                if done(statuses) { break }
            }
            end.withLock { $0 = Self.now }
        }
        Task {
            try? await Task.sleep(for: .seconds(seconds))
            follower.cancel()
        }
        return follower
    }

    /// Waits (at most 10 s) until the log holds at least `count` statuses.
    package func waitFor(count: Int) async {
        await waitUntil { $0.count >= count }
    }

    /// Waits (at most 10 s) until `condition` holds for the statuses logged so far.
    package func waitUntil(_ condition: ([PoolStatus]) -> Bool) async {
        for _ in 0..<1000 where !condition(statuses) {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// The busy reasons seen, each run of equal sets counted once: e.g. [[], ["capturing"], []].
    package var busyReasonChanges: [[String]] {
        statuses.map { $0.busyReasons.names.sorted() }.reduce(into: []) { runs, reasons in
            if runs.last != reasons { runs.append(reasons) }
        }
    }
}

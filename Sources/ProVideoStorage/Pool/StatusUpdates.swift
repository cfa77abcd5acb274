import FoundationEssentials
import Synchronization
import ProVideoSystem

extension Pool {
    /// How often `statusUpdates()` looks even without an inotify event, in milliseconds: busy
    /// reasons are OFD locks, which raise no event.
    static let statusFallbackInterval: Int32 = 500
    /// The shortest time between two looks after events, in microseconds: a capture's file
    /// raises an event per write, far more often than anyone reads a status.
    static let statusEventCoalescing: UInt32 = 50_000

    /// The pool's status now, then again each time it changes, in this process or another:
    /// capacity (a capture's progress, a grant, a replenish, a resize), busy reasons, the
    /// running captures. A change shows within about half a second: the stream wakes on the
    /// kernel's change notification (inotify on the pool directory, `captures/` and each
    /// capture's directory) and at least every 500 ms, because busy reasons live in OFD locks,
    /// which no notification reports, and on filesystems whose changes inotify does not see
    /// (NFS, FUSE and other network filesystems changed by another machine) the timer alone
    /// keeps it live. Only a status different from the last one yielded is yielded.
    ///
    /// Watching runs on a thread of its own; iterate from any task. The stream ends when the
    /// iterating task is cancelled (the thread stops within 500 ms) or when the pool is
    /// destroyed (its `pool.json` is gone); when inotify is not available
    /// (`fs.inotify.max_user_instances` reached), it runs on the timer alone; when no thread can
    /// be started (pthread_create(3) EAGAIN), the stream ends at once.
    /// Each look costs what `status()` costs: a few statx(2) calls and small reads per capture.
    public func statusUpdates() -> AsyncStream<PoolStatus> {
        let (stream, continuation) = AsyncStream.makeStream(of: PoolStatus.self, bufferingPolicy: .bufferingNewest(16))
        let stopped = StopFlag()
        continuation.onTermination = { _ in stopped.stop() }
        let watch: @Sendable () -> Void = { [self] in
            let watcher = try? ChangeWatcher(layout: layout)
            var last: PoolStatus?
            while !stopped.isStopped {
                // A read can fail while a capture's files are being removed: only a pool
                // without its pool.json (destroyed) ends the stream.
                if let status = try? status(), status != last {
                    continuation.yield(status)
                    last = status
                } else if !FileSystem.exists(layout.configuration) {
                    break
                }
                if let watcher {
                    if watcher.wait(milliseconds: Self.statusFallbackInterval) {
                        MonotonicTime.sleep(microseconds: Self.statusEventCoalescing)
                        _ = watcher.wait(milliseconds: 0)
                    }
                    watcher.refreshCaptureWatches()
                } else {
                    MonotonicTime.sleep(microseconds: UInt32(Self.statusFallbackInterval) * 1000)
                }
            }
            continuation.finish()
        }
        // Without a thread there is nothing to watch with: the stream ends at once.
        do { try DetachedThread.start(name: "provideo-status", watch) } catch { continuation.finish() }
        return stream
    }
}

/// Set once by the stream's termination, read by its watching thread.
private final class StopFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    func stop() { flag.store(true, ordering: .relaxed) }
    var isStopped: Bool { flag.load(ordering: .relaxed) }
}

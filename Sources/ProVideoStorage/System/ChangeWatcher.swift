import Foundation
import Glibc

/// Waits for changes in a pool's files with inotify(7): the pool directory (`pool.json`
/// replaced, `reserve` resized), `captures/` (a capture starting or ending) and each capture's
/// directory (its `progress` block rewritten, its file granted more space). OFD locks, which
/// carry the busy reasons, raise no event: callers also look on a timer (`wait`'s timeout).
final class ChangeWatcher {
    private let fd: Int32
    private let layout: PoolLayout
    /// Watch descriptors of the capture directories, by path.
    private var captureWatches: [String: Int32] = [:]
    private static let mask = UInt32(IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE)

    /// - Throws: `.ioError` when inotify is unavailable (`fs.inotify.max_user_instances`).
    init(layout: PoolLayout) throws {
        self.layout = layout
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        if fd < 0 { throw ProVideoError.system("inotify_init1", errno: errno, path: layout.directory) }
        for directory in [layout.directory, layout.captures] { _ = inotify_add_watch(fd, directory, Self.mask) }
        refreshCaptureWatches()
    }

    deinit { close(fd) }

    /// Watches every capture directory now in `captures/` (and `captures/` itself, which a
    /// pool may create after the watcher); forgets those that are gone.
    func refreshCaptureWatches() {
        _ = inotify_add_watch(fd, layout.captures, Self.mask)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: layout.captures)) ?? []
        let present = Set(names.map { layout.captures + "/" + $0 })
        for (directory, watch) in captureWatches where !present.contains(directory) {
            inotify_rm_watch(fd, watch)
            captureWatches[directory] = nil
        }
        for directory in present where captureWatches[directory] == nil {
            let watch = inotify_add_watch(fd, directory, Self.mask)
            if watch >= 0 { captureWatches[directory] = watch }
        }
    }

    /// Waits up to `milliseconds` for an event, then drains every queued event.
    /// - Returns: whether any event came.
    func wait(milliseconds: Int32) -> Bool {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, milliseconds) > 0 else { return false }
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        var got = false
        while read(fd, &buffer, buffer.count) > 0 { got = true }
        return got
    }
}

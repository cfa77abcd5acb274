import FoundationEssentials
import ProVideoSystem

/// Waits for changes in a pool's files (`Inotify`): the pool directory (`pool.json` replaced,
/// `reserve` resized), `captures/` (a capture starting or ending) and each capture's directory
/// (its `progress` block rewritten, its file granted more space). OFD locks, which carry the
/// busy reasons, raise no event: callers also look on a timer (`wait`'s timeout).
final class ChangeWatcher {
    private let inotify: Inotify
    private let layout: PoolLayout
    /// Watch descriptors of the capture directories, by path.
    private var captureWatches: [String: Int32] = [:]

    /// - Throws: `.ioError` when inotify is unavailable (`fs.inotify.max_user_instances`).
    init(layout: PoolLayout) throws {
        self.layout = layout
        inotify = try Inotify(for: layout.directory)
        for directory in [layout.directory, layout.captures] { inotify.watch(directory) }
        refreshCaptureWatches()
    }

    /// Watches every capture directory now in `captures/` (and `captures/` itself, which a
    /// pool may create after the watcher); forgets those that are gone.
    func refreshCaptureWatches() {
        inotify.watch(layout.captures)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: layout.captures)) ?? []
        let present = Set(names.map { layout.captures + "/" + $0 })
        for (directory, watch) in captureWatches where !present.contains(directory) {
            inotify.unwatch(watch)
            captureWatches[directory] = nil
        }
        for directory in present where captureWatches[directory] == nil {
            if let watch = inotify.watch(directory) { captureWatches[directory] = watch }
        }
    }

    /// Waits up to `milliseconds` for an event, then drains every queued event.
    /// - Returns: whether any event came.
    func wait(milliseconds: Int32) -> Bool { inotify.wait(milliseconds: milliseconds) }
}

import Glibc

/// An inotify(7) instance watching directories for changed, created, replaced and deleted
/// entries. The corresponding C functions are inotify_init1(2), inotify_add_watch(2),
/// inotify_rm_watch(2), poll(2) and read(2).
package final class Inotify {
    private let fd: Int32
    private static let mask = UInt32(IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE)

    /// - Throws: `.ioError` when inotify is unavailable (`fs.inotify.max_user_instances`);
    ///   `path` names what the caller wanted to watch, for the message.
    package init(for path: String) throws {
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        if fd < 0 { throw ProVideoError.system("inotify_init1", errno: errno, path: path) }
    }

    deinit { close(fd) }

    /// Watches `directory` (again: the same watch); nil when it cannot (it is missing).
    @discardableResult
    package func watch(_ directory: String) -> Int32? {
        let watch = inotify_add_watch(fd, directory, Self.mask)
        return watch >= 0 ? watch : nil
    }

    package func unwatch(_ watch: Int32) { inotify_rm_watch(fd, watch) }

    /// Waits up to `milliseconds` for an event, then drains every queued event.
    /// - Returns: whether any event came.
    package func wait(milliseconds: Int32) -> Bool {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, milliseconds) > 0 else { return false }
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        var got = false
        while read(fd, &buffer, buffer.count) > 0 { got = true }
        return got
    }
}

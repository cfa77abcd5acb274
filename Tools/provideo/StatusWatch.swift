import CommandLineSupport
import Foundation
import Glibc
import ProVideoStorage

/// `status --watch [SECONDS]`: the status view again every interval, like `iostat 1`, with
/// each capture's write rate since the last view. On a terminal the view is redrawn in place;
/// otherwise each view follows the last after a timestamp line. Ends cleanly (exit 0) on
/// `q` (when standard input is a terminal: `TerminalKeys`), Ctrl-C, SIGTERM or SIGHUP.
struct StatusWatch {
    var pool: Pool
    var interval: Double
    var rate: RecordingRate?
    var exactBytes: Bool

    func run() throws {
        StopSignals.install(restart: false)
        let terminal = isatty(STDOUT_FILENO) == 1
        // Restored by the defer on every way out: q, a signal, a failed status.
        let keys = TerminalKeys()
        defer { keys?.restore() }
        let stopWords = keys == nil ? "Ctrl-C to stop" : "q or Ctrl-C to stop"
        var quit = false
        var previous: (written: [String: Int64], at: Double)?
        while !StopSignals.requested && !quit {
            let now = ProgressLine.monotonicSeconds()
            let status = try pool.status()
            var view = StatusView(status: status, rate: rate, exactBytes: exactBytes)
            let written = Dictionary(status.captures.map { ($0.id, $0.bytesWritten) }) { first, _ in first }
            if let previous, now > previous.at {
                for (id, bytes) in written {
                    if let before = previous.written[id] { view.captureRates[id] = Double(bytes - before) / (now - previous.at) }
                }
            }
            previous = (written, now)
            let stamp = ISO8601DateFormatter().string(from: Date())
            // Home and clear-to-end on a terminal: one view that changes in place.
            print((terminal ? "\u{1B}[H\u{1B}[J" : "") + "\(stamp)  every \(interval) s, \(stopWords)")
            print(view.lines.joined(separator: "\n") + (terminal ? "" : "\n"))
            fflush(nil)  // a pipe reader sees each view as it is made
            while !StopSignals.requested && !quit && ProgressLine.monotonicSeconds() - now < interval {
                if let keys {
                    quit = keys.key(within: 50).map { $0 == UInt8(ascii: "q") || $0 == UInt8(ascii: "Q") } ?? false
                } else {
                    usleep(50_000)
                }
            }
        }
        if terminal { print("") }  // the shell's prompt after the view, not on its last line
    }
}

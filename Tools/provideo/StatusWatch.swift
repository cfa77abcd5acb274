import CommandLineSupport
import Foundation
import Glibc
import ProVideoStorage

/// `status --watch [SECONDS]`: the status view again every interval, like `iostat 1`, with
/// each capture's write rate since the last view. On a terminal the view is redrawn in place;
/// otherwise each view follows the last after a timestamp line. Ends cleanly (exit 0) on
/// Ctrl-C, SIGTERM or SIGHUP.
struct StatusWatch {
    var pool: Pool
    var interval: Double
    var rate: RecordingRate?
    var exactBytes: Bool

    func run() throws {
        StopSignals.install(restart: false)
        let terminal = isatty(STDOUT_FILENO) == 1
        var previous: (written: [String: Int64], at: Double)?
        while !StopSignals.requested {
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
            print((terminal ? "\u{1B}[H\u{1B}[J" : "") + "\(stamp)  every \(interval) s, Ctrl-C to stop")
            print(view.lines.joined(separator: "\n") + (terminal ? "" : "\n"))
            fflush(nil)  // a pipe reader sees each view as it is made
            while !StopSignals.requested && ProgressLine.monotonicSeconds() - now < interval { usleep(50_000) }
        }
    }
}

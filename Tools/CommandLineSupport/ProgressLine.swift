import Foundation
import Glibc
import ProVideoStorage

/// Progress of a long operation on standard error: on a terminal one line redrawn in place
/// (at most ten times a second), otherwise a line every `interval` seconds, so a log or a pipe
/// gets a few lines, not one per percent. Each line gives the rate and the time left.
public struct ProgressLine {
    public var label: String
    public var total: Int64
    /// Bytes already done before this line started (where a resumed transfer starts): left out
    /// of the rate.
    public var baseline: Int64 = 0
    private let terminal: Bool
    private let interval: Double
    private let clock: () -> Double
    private let write: (String) -> Void
    private let started: Double
    private var lastShown: Double
    private var shownOnce = false

    /// - Parameters:
    ///   - label: what is being done ("zero-filling the reserve").
    ///   - total: bytes the operation will do.
    ///   - terminal: redraw in place; default: whether standard error is a terminal.
    ///   - interval: seconds between lines when not on a terminal.
    public init(_ label: String, total: Int64, terminal: Bool = isatty(STDERR_FILENO) == 1, interval: Double = 5,
                clock: @escaping () -> Double = ProgressLine.monotonicSeconds,
                write: @escaping (String) -> Void = { FileHandle.standardError.write(Data($0.utf8)) }) {
        self.label = label
        self.total = total
        self.terminal = terminal
        self.interval = interval
        self.clock = clock
        self.write = write
        started = clock()
        lastShown = started
    }

    /// Reports `done` bytes; shows a line when one is due.
    public mutating func update(_ done: Int64) {
        let now = clock()
        guard now - lastShown >= (terminal ? 0.1 : interval) else { return }
        lastShown = now
        shownOnce = true
        write(terminal ? "\r\u{1B}[K" + text(done, at: now) : text(done, at: now) + "\n")
    }

    /// Ends the line: the final figure on a terminal, or one last line when any was shown.
    /// - Parameter done: where the operation ended, when it stopped short of `total`.
    public mutating func finish(at done: Int64? = nil) {
        let now = clock()
        let last = text(done ?? total, at: now)
        if terminal { write("\r\u{1B}[K" + last + "\n") } else if shownOnce { write(last + "\n") }
    }

    /// "zero-filling the reserve: 45% (920 MiB of 2.00 GiB), 310 MB/s, 0:00:04 left".
    public func text(_ done: Int64, at now: Double) -> String {
        let elapsed = now - started
        let percent = total > 0 ? Int(checked: Double(done) * 100 / Double(total)) ?? 0 : 100
        var line = "\(label): \(percent)% (\(ByteFormat.significant(done)) of \(ByteFormat.significant(total)))"
        guard elapsed > 0, done > baseline else { return line }
        let rate = Double(done - baseline) / elapsed
        line += String(format: ", %.0f MB/s", rate / 1e6)
        if done < total {
            if let left = Int(checked: Double(total - done) / rate) {
                line += String(format: ", %d:%02d:%02d left", left / 3600, left / 60 % 60, left % 60)
            }
        }
        return line
    }

    public static func monotonicSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}

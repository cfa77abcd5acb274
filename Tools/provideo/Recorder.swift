import CProVideo
import CommandLineSupport
import Foundation
import Glibc
import ProVideoStorage

/// Feeds a capture from a file descriptor (standard input for `record`): each read is appended
/// as one frame. The input is a byte stream, so commit points are read boundaries, not video
/// frames.
enum Recorder {
    /// What the recorder did with its input.
    struct Outcome {
        var result: RecordingResult
        /// Reads refused with `.overrun` (`--overrun fail`): bytes missing from the recording.
        var droppedBytes: Int64 = 0
        var droppedReads = 0
        var storageFull = false
        var stoppedBySignal = false
    }

    /// After SIGINT/SIGTERM/SIGHUP the input is still read, for at most this long, so the
    /// writer upstream (ffmpeg stopped by the same Ctrl-C) can flush its last bytes.
    static let stopGraceMilliseconds = 2000

    /// Reads until end of input, a stop signal, or a full reserve, then finishes the capture.
    /// - Throws: `.invalidArgument` when no byte arrived (the capture is cancelled, no file is
    ///   left); the capture's error when a write failed.
    static func capture(from fd: Int32, into capture: Capture, chunk: Int = 1 << 20) throws -> Outcome {
        var buffer = [UInt8](repeating: 0, count: chunk)
        var input = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        var dropped: (bytes: Int64, reads: Int) = (0, 0)
        var storageFull = false
        var stopDeadline: Date?
        while true {
            if stopDeadline == nil && pv_stop_requested() != 0 {
                stopDeadline = Date(timeIntervalSinceNow: Double(stopGraceMilliseconds) / 1000)
            }
            if let deadline = stopDeadline, deadline < Date() { break }
            // While the input is quiet, keep the capture's progress and commits going.
            let ready = Glibc.poll(&input, 1, 200)
            if ready == 0 || (ready < 0 && errno == EINTR) {
                try capture.poll()
                continue
            }
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, chunk) }
            if n == 0 { break }
            if n < 0 {
                if errno == EINTR { continue }
                throw ProVideoError(.ioError, "reading the input failed: \(String(cString: strerror(errno)))")
            }
            do {
                try buffer.withUnsafeBytes { try capture.append(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            } catch let error as ProVideoError where error.code == .overrun {
                dropped.bytes += Int64(n)
                dropped.reads += 1
            } catch let error as ProVideoError where error.code == .storageFull {
                // The part of this read that still fits is recorded: the reserve is used to its end.
                let fits = Int(min(Int64(n), capture.remainingCapacity))
                if fits > 0 {
                    try buffer.withUnsafeBytes { try capture.append(UnsafeRawBufferPointer(rebasing: $0[0..<fits])) }
                }
                storageFull = true
                break
            }
        }
        if capture.length == 0 && storageFull {
            try capture.cancel()
            throw ProVideoError(.storageFull, "storage full: the pool has no remaining capacity, nothing was recorded and "
                                + "no file was created; run `provideo replenish` or `provideo resize`")
        }
        if capture.length == 0 && dropped.reads == 0 {
            try capture.cancel()
            throw ProVideoError(.invalidArgument, "no input arrived: nothing was recorded and no file was created")
        }
        return Outcome(result: try capture.finish(), droppedBytes: dropped.bytes, droppedReads: dropped.reads,
                       storageFull: storageFull, stoppedBySignal: stopDeadline != nil)
    }

    /// Prints the one-line summary; throws (exit 1) when the recording is not the whole input.
    static func report(_ outcome: Outcome, seconds: Double) throws {
        let result = outcome.result
        let stats = result.statistics
        let rate = seconds > 0 ? Double(result.length) * 8 / seconds / 1e6 : 0
        print("recorded \(ByteFormat.human(result.length)) (\(result.length) bytes) in "
              + String(format: "%.1f s (%.1f Mbit/s)", seconds, rate)
              + " to \(result.path); engine \(stats.engine), \(stats.frames) appends, "
              + "waited for the disk \(stats.overruns) times, append p99 \(stats.appendLatency.percentile(0.99) / 1000) µs")
        if let destination = result.landingTo {
            print("landing at \(destination) in the background: `provideo land` (or provideo-land.service) copies it there")
        }
        if outcome.stoppedBySignal {
            CommandLineProgram.printError("note: stopped by a signal; the recording holds everything received until then")
        }
        if outcome.storageFull {
            throw ProVideoError(.storageFull, "storage full: the pool's reserve ran out; the \(ByteFormat.human(result.length)) "
                                + "received until then are at \(result.path), the rest of the input was dropped. "
                                + "Run `provideo replenish` or `provideo resize` for more room")
        }
        if outcome.droppedReads > 0 {
            throw ProVideoError(.overrun, "the disk fell behind: \(outcome.droppedReads) reads (\(ByteFormat.human(outcome.droppedBytes))) "
                                + "were dropped (--overrun fail), so \(result.path) has gaps; use --overrun wait to hold the "
                                + "input back instead")
        }
    }
}

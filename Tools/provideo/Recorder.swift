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
        /// Why reading the input failed (strerror), when it did: the recording holds what was
        /// received until then.
        var inputError: String?
        /// From the first byte of input to the end of input (or the stop): the input's own
        /// time, without the encoder's start-up before its first byte.
        var inputSeconds: Double = 0
    }

    /// After SIGINT/SIGTERM/SIGHUP the input is still read, for at most this long, so the
    /// writer upstream (ffmpeg stopped by the same Ctrl-C) can flush its last bytes.
    static let stopGraceMilliseconds = 2000

    /// Reads until end of input, a stop signal, a full reserve or a failed read, then finishes
    /// the capture: a read error (a connection reset, an input that is a directory) ends the
    /// take like end of input, since every byte received is the recorder's to keep.
    /// - Throws: `.invalidArgument` when no byte arrived, `.ioError` when the first read
    ///   failed (the capture is cancelled, no file is left); the capture's error when a write
    ///   failed. `finishing` gets the progress of the finish's copy to another filesystem.
    static func capture(from fd: Int32, into capture: Capture, chunk: Int = 1 << 20,
                        finishing: OperationControl = .none) throws -> Outcome {
        var buffer = [UInt8](repeating: 0, count: chunk)
        var input = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        var dropped: (bytes: Int64, reads: Int) = (0, 0)
        var storageFull = false
        var stopDeadline: Date?
        var firstInput: Date?
        var inputError: String?
        while true {
            if stopDeadline == nil && StopSignals.requested {
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
                inputError = String(cString: strerror(errno))
                break
            }
            if firstInput == nil { firstInput = Date() }
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
        if capture.length == 0 && dropped.reads == 0, let inputError {
            try capture.cancel()
            throw ProVideoError(.ioError, "reading the input failed: \(inputError); nothing was recorded and no file was created")
        }
        if capture.length == 0 && dropped.reads == 0 {
            try capture.cancel()
            throw ProVideoError(.invalidArgument, "no input arrived: nothing was recorded and no file was created")
        }
        let inputSeconds = firstInput.map { Date().timeIntervalSince($0) } ?? 0
        return Outcome(result: try capture.finish(control: finishing), droppedBytes: dropped.bytes, droppedReads: dropped.reads,
                       storageFull: storageFull, stoppedBySignal: stopDeadline != nil, inputError: inputError,
                       inputSeconds: inputSeconds)
    }

    /// A take renamed on the pool's filesystem keeps the blocks the reserve granted it: the
    /// remaining capacity stays lower by its size until a replenish.
    struct ReserveNote {
        var remainingCapacity: Int64
        var capacity: Int64
        /// Set with `record --replenish`.
        var replenished: ReplenishResult?

        var line: String {
            // Three significant digits, as `status` prints them: with one decimal a 50 MiB take
            // left "1.5 GiB of 1.5 GiB" (issue 42).
            guard let replenished else {
                return "the take's space came out of the pool's reserve: \(ByteFormat.significant(remainingCapacity)) of "
                    + "\(ByteFormat.significant(capacity)) remain; `provideo replenish` (or `record --replenish`) refills it "
                    + "from the filesystem's free space"
            }
            return "replenished the reserve by \(ByteFormat.human(replenished.added)): \(ByteFormat.significant(remainingCapacity)) of "
                + "\(ByteFormat.significant(capacity)) remain"
                + (replenished.missing > 0 ? " (\(ByteFormat.human(replenished.missing)) short: free space on the filesystem)" : "")
        }
    }

    /// Prints the one-line summary (or, with `json`, the summary as JSON) and what the take did
    /// to the reserve; throws (exit 1) when the recording is not the whole input.
    static func report(_ outcome: Outcome, poolPath: String, json: Bool = false, reserve: ReserveNote? = nil) throws {
        let result = outcome.result
        let stats = result.statistics
        let seconds = outcome.inputSeconds
        let bitrate = seconds > 0 ? Double(result.length) * 8 / seconds : 0
        let copied = wasCopied(result, poolPath: poolPath)
        if json {
            try CommandLineProgram.printJSON(CommandReports.Record(
                path: result.path, length: result.length, seconds: seconds, inputBitrate: Int64(checked: bitrate) ?? 0,
                copiedAndVerified: copied, engine: stats.engine, appends: stats.frames, overruns: stats.overruns,
                shortWritesRetried: stats.shortWritesRetried, commits: stats.commits,
                appendLatencyP99Nanoseconds: stats.appendLatency.percentile(0.99),
                appendLatencyMaxNanoseconds: stats.appendLatency.maximum, droppedBytes: outcome.droppedBytes,
                droppedReads: outcome.droppedReads,
                storageFull: outcome.storageFull, stoppedBySignal: outcome.stoppedBySignal,
                remainingCapacity: reserve?.remainingCapacity, replenishedBytes: reserve?.replenished?.added))
        } else {
            print(summary(outcome, copied: copied))
            if let reserve { print(reserve.line) }
            if let destination = result.landingTo {
                print("landing at \(destination) in the background: `provideo land` (or provideo-land.service) copies it there")
            }
        }
        // A cut-off MOV/MP4 may not play: say so, and what to do (issue 42).
        let playable = outcome.storageFull || outcome.stoppedBySignal ? MovieIndexHint.sentence(for: result.path) : nil
        if outcome.stoppedBySignal {
            CommandLineProgram.printError("note: stopped by a signal; the recording holds everything received until then"
                                          + (playable.map { "; \($0)" } ?? ""))
        }
        if let inputError = outcome.inputError {
            throw ProVideoError(.ioError, "reading the input failed: \(inputError); the \(ByteFormat.human(result.length)) "
                                + "received until then are at \(result.path)")
        }
        if outcome.storageFull {
            throw ProVideoError(.storageFull, "storage full: the pool's reserve ran out; the \(ByteFormat.human(result.length)) "
                                + "received until then are at \(result.path), the rest of the input was dropped"
                                + (playable.map { " (\($0))" } ?? "") + ". Run `provideo replenish` or `provideo resize` for more room")
        }
        if outcome.droppedReads > 0 {
            throw ProVideoError(.overrun, "the disk fell behind: \(outcome.droppedReads) reads (\(ByteFormat.human(outcome.droppedBytes))) "
                                + "were dropped (--overrun fail), so \(result.path) has gaps; use --overrun wait to hold the "
                                + "input back instead")
        }
    }

    /// Below this, the input's length says nothing of a stream's rate: it came as fast as it
    /// could be read (a file, a pipe from another program).
    static let shortestRatedInput = 1.0

    /// The summary line: what was recorded where, how fast the input came, and whether the
    /// disk kept up, held the input back (`--overrun wait`) or made reads be dropped (`fail`).
    static func summary(_ outcome: Outcome, copied: Bool) -> String {
        let result = outcome.result
        let stats = result.statistics
        let seconds = outcome.inputSeconds
        var line = "recorded \(ByteFormat.human(result.length)) (\(result.length) bytes)"
            + (copied ? "; copied to another filesystem and verified at " : " to ") + result.path + "; "
        line += seconds >= shortestRatedInput
            ? String(format: "the input came at %.1f Mbit/s over %.1f s", Double(result.length) * 8 / seconds / 1e6, seconds)
            : String(format: "the input came all at once (in %.2f s, as from a file: no stream rate to show)", seconds)
        // `overruns` counts every append that found each buffer in flight: the refused ones
        // (`overrunFailures`, each a dropped read) and those that waited for a buffer.
        let waits = max(stats.overruns - stats.overrunFailures, 0)
        var disk: [String] = []
        if waits > 0 { disk.append("the disk fell behind and held the input back \(waits) time(s)") }
        if outcome.droppedReads > 0 {
            disk.append("the disk fell behind and \(outcome.droppedReads) read(s) (\(ByteFormat.human(outcome.droppedBytes))) "
                        + "were dropped: no buffer was free for them in time")
        }
        line += "; " + (disk.isEmpty ? "the disk kept up" : disk.joined(separator: ", and "))
        return line + "; engine \(stats.engine), \(stats.frames) append\(stats.frames == 1 ? "" : "s"), append p99 \(stats.appendLatency.percentile(0.99) / 1000) µs"
    }

    /// Whether the recording is on another filesystem than its pool (st_dev differs): it was
    /// copied there and verified, not renamed, and took no space from the reserve.
    static func wasCopied(_ result: RecordingResult, poolPath: String) -> Bool {
        func device(_ path: String) -> Int? { (try? FileManager.default.attributesOfItem(atPath: path))?[.systemNumber] as? Int }
        return device(result.path) != device(poolPath)
    }
}

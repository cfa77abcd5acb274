import CProVideo
import CommandLineSupport
import Foundation
import Glibc
import ProVideoStorage

/// The admin commands. Each reads its own arguments and prints its result.
enum Commands {
    static func create(_ path: String, _ arguments: inout Arguments) throws {
        guard let text = try arguments.option("--capacity") else { throw UsageError("create needs --capacity SIZE") }
        let capacity = try SizeParser.bytes(text)
        let zero = arguments.flag("--zero")
        try arguments.finish()
        guard capacity > 0 else { throw UsageError("the capacity must be more than 0 bytes") }
        var lastPercent = -1
        let pool = try Pool.create(at: path, capacity: capacity, zeroFill: zero) { done, total in
            let percent = Int(done * 100 / max(total, 1))
            if percent != lastPercent {
                lastPercent = percent
                CommandLineProgram.printError("zero-filling the reserve: \(percent)% (\(ByteFormat.human(done)) of \(ByteFormat.human(total)))")
            }
        }
        print("created a pool of \(ByteFormat.human(pool.initialCapacity)) (\(pool.initialCapacity) bytes) at \(pool.path)")
    }

    static func status(_ path: String, _ arguments: inout Arguments) throws {
        let json = arguments.flag("--json")
        try arguments.finish()
        let status = try Pool.open(at: path).status()
        if json { return try CommandLineProgram.printJSON(status) }
        let device = status.device
        print("""
        pool        \(status.path) (\(status.filesystem)\(device.path.map { " on \($0)" } ?? ""))
        capacity    \(ByteFormat.human(status.initialCapacity))
        remaining   \(ByteFormat.human(status.remainingCapacity))\(status.recordingSecondsRemaining.map { String(format: " (%.0f s at the capture's bitrate)", $0) } ?? "")
        on disk     \(ByteFormat.human(status.reservedBytesOnDisk)) allocated
        busy        \(status.busyReasons.isEmpty ? "no" : status.busyReasons.joined(separator: ", "))
        direct I/O  aligned to \(status.directIOAlignment.offset) B (offset), \(status.directIOAlignment.memory) B (memory)
        device      sectors \(device.logicalSectorSize) B logical, \(device.physicalSectorSize) B physical; optimal I/O \(device.optimalIOSize) B
        engine      \(status.engine)
        """)
        if let capture = status.capture {
            print("capture     → \(capture.destination): \(ByteFormat.human(capture.bytesWritten)) written, "
                  + "\(ByteFormat.human(capture.committedBytes)) committed (pid \(capture.pid))")
        }
    }

    static func resize(_ path: String, _ arguments: inout Arguments) throws {
        let capacity = try SizeParser.bytes(try arguments.positional("SIZE"))
        try arguments.finish()
        guard capacity > 0 else { throw UsageError("the capacity must be more than 0 bytes") }
        let size = try Pool.open(at: path).resize(to: capacity)
        print("the pool's capacity is now \(ByteFormat.human(size)) (\(size) bytes)")
    }

    static func replenish(_ path: String, _ arguments: inout Arguments) throws {
        try arguments.finish()
        let result = try Pool.open(at: path).replenishCapacity()
        if result.missing == 0 {
            print("replenished: added \(ByteFormat.human(result.added)); remaining capacity \(ByteFormat.human(result.remainingCapacity))")
        } else {
            print("replenished partly: added \(ByteFormat.human(result.added)), still \(ByteFormat.human(result.missing)) short "
                  + "of the capacity; free space on the filesystem and run replenish again")
        }
    }

    static func destroy(_ path: String, _ arguments: inout Arguments) throws {
        try arguments.finish()
        try Pool.open(at: path).destroy()
        print("destroyed the pool at \(path)")
    }

    static func record(_ path: String, _ arguments: inout Arguments) throws {
        var options = CaptureOptions()
        if let rate = try arguments.option("--bitrate") { options.bitrate = try SizeParser.bitrate(rate) }
        switch try arguments.option("--overrun") {
        case nil, "wait": break
        case "fail": options.overrunPolicy = .fail
        case let other?: throw UsageError("--overrun takes wait or fail, not '\(other)'")
        }
        if let text = try arguments.option("--durability") {
            guard let seconds = Double(text), seconds >= 0 else { throw UsageError("--durability takes seconds, e.g. 1 or 0.5") }
            options.durabilityInterval = UInt64(seconds * 1e9)
        }
        let destination = try arguments.positional("DEST")
        try arguments.finish()
        let capture = try Pool.open(at: path).startCapture(to: destination, options: options)
        _ = pv_install_stop_signals()
        let started = Date()
        let result = try Recorder.capture(from: 0, into: capture)
        let seconds = Date().timeIntervalSince(started)
        print(Recorder.summary(result, seconds: seconds))
    }

    static func recover(_ path: String, _ arguments: inout Arguments) throws {
        try arguments.finish()
        let pool = try Pool.open(at: path)
        if pool.salvaged.isEmpty { print("nothing to recover: no capture was left by a dead recorder") }
        for recording in pool.salvaged {
            print("recovered \(recording.length) bytes to \(recording.path)")
        }
    }

    static func list(_ path: String, _ arguments: inout Arguments) throws {
        let json = arguments.flag("--json")
        try arguments.finish()
        let pool = try Pool.open(at: path)
        let listing = try pool.listing()
        if json { return try CommandLineProgram.printJSON(listing) }
        if let capture = listing.capture {
            print("capturing → \(capture.destination): \(ByteFormat.human(capture.bytesWritten)) written (pid \(capture.pid))")
        }
        if listing.recordings.isEmpty { print("the pool holds no recordings") }
        for held in listing.recordings {
            print("\(held.path)  \(ByteFormat.human(held.length))  meant for \(held.destination): \(held.reason)")
        }
        for recovered in listing.recovered {
            let when = Date(timeIntervalSince1970: recovered.salvagedAt)
            print("recovered \(when): \(recovered.path) (\(recovered.length) bytes)")
        }
    }

    static func move(_ path: String, _ arguments: inout Arguments) throws {
        let held = try arguments.positional("HELD (a recording `provideo list` shows)")
        let destination = try? arguments.positional("DEST")
        try arguments.finish()
        let target = try Pool.open(at: path).moveHeldRecording(held, to: destination)
        print("moved \(held) to \(target); run `provideo replenish` to return the space to the reserve")
    }

    static func check(_ path: String, _ arguments: inout Arguments) throws {
        try arguments.finish()
        let problems = try Pool.open(at: path).check()
        if problems.isEmpty {
            print("ok: the pool's accounting matches the disk")
            return
        }
        for problem in problems { print("problem: \(problem)") }
        throw ProVideoError(.corruptState, "the pool at \(path) failed \(problems.count) check(s)")
    }
}

/// Feeds a capture from a file descriptor (standard input for `record`).
enum Recorder {
    /// Appends each read as one frame until end of input or SIGINT/SIGTERM, then finishes.
    static func capture(from fd: Int32, into capture: Capture, chunk: Int = 1 << 20) throws -> RecordingResult {
        var buffer = [UInt8](repeating: 0, count: chunk)
        var input = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while pv_stop_requested() == 0 {
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
            } catch let error as ProVideoError where error.code == .storageFull {
                CommandLineProgram.printError("error: \(error.message); finishing with what was accepted")
                let result = try capture.finish()
                throw ProVideoError(.storageFull, "storage full: recorded \(result.length) bytes to \(result.path), the rest of the input was dropped")
            }
        }
        return try capture.finish()
    }

    static func summary(_ result: RecordingResult, seconds: Double) -> String {
        let stats = result.statistics
        let rate = seconds > 0 ? Double(result.length) * 8 / seconds / 1e6 : 0
        return "recorded \(ByteFormat.human(result.length)) (\(result.length) bytes) in "
            + String(format: "%.1f s (%.1f Mbit/s)", seconds, rate)
            + " to \(result.path); engine \(stats.engine), \(stats.frames) writes, \(stats.overruns) overruns, "
            + "append p99 \(stats.appendLatency.percentile(0.99) / 1000) µs"
    }
}

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
        let group = try arguments.option("--group")
        try arguments.finish()
        guard capacity > 0 else { throw UsageError("the capacity must be more than 0 bytes") }
        if group?.isEmpty == true { throw UsageError("--group needs a group name") }
        var lastPercent = -1
        let pool = try Pool.create(at: path, capacity: capacity, zeroFill: zero, group: group) { done, total in
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
        let status = try openPool(path).status()
        if json { return try CommandLineProgram.printJSON(status) }
        let device = status.device
        print("""
        pool        \(status.path) (\(status.filesystem)\(device.path.map { " on \($0)" } ?? ""))
        capacity    \(ByteFormat.human(status.initialCapacity))
        remaining   \(ByteFormat.human(status.remainingCapacity))\(status.recordingSecondsRemaining.map { String(format: $0 < 10 ? " (%.1f s at the capture's bitrate)" : " (%.0f s at the capture's bitrate)", $0) } ?? "")
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
        LandingLines.printStatus(status)
    }

    static func resize(_ path: String, _ arguments: inout Arguments) throws {
        let capacity = try SizeParser.bytes(try arguments.positional("SIZE"))
        try arguments.finish()
        guard capacity > 0 else { throw UsageError("the capacity must be more than 0 bytes") }
        let size = try openPool(path).resize(to: capacity)
        print("the pool's capacity is now \(ByteFormat.human(size)) (\(size) bytes)")
    }

    static func replenish(_ path: String, _ arguments: inout Arguments) throws {
        try arguments.finish()
        let result = try openPool(path).replenishCapacity()
        if result.missing == 0 {
            print("replenished: added \(ByteFormat.human(result.added)); remaining capacity \(ByteFormat.human(result.remainingCapacity))")
        } else {
            print("replenished partly: added \(ByteFormat.human(result.added)), still \(ByteFormat.human(result.missing)) short "
                  + "of the capacity; free space on the filesystem and run replenish again")
        }
    }

    static func destroy(_ path: String, _ arguments: inout Arguments) throws {
        try arguments.finish()
        do {
            try openPool(path).destroy()
            print("destroyed the pool at \(path)")
        } catch let error as ProVideoError where error.code == .poolNotFound {
            guard try Pool.removeRemains(at: path) else { throw error }
            print("removed what an interrupted destroy left at \(path)")
        }
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
        if let mode = try arguments.option("--land") {
            guard let landing = LandingMode(rawValue: mode == "auto" ? "automatic" : mode) else {
                throw UsageError("--land takes auto, finish or background, not '\(mode)'")
            }
            options.landing = landing
        }
        let destination = try arguments.positional("DEST")
        try arguments.finish()
        let capture = try openPool(path).startCapture(to: destination, options: options)
        _ = pv_install_stop_signals(0)
        let started = Date()
        let outcome: Recorder.Outcome
        do {
            outcome = try Recorder.capture(from: 0, into: capture)
        } catch var error as ProVideoError where error.code == .ioError || error.code == .notEnoughSpace {
            // The capture failed and let go of the pool: salvage its committed part right now, so
            // the take is at its destination without waiting for a later command.
            if let salvaged = (try? Pool.open(at: path))?.salvaged.first {
                error.message += "; salvaged \(ByteFormat.human(salvaged.length)) (\(salvaged.length) bytes) to \(salvaged.path)"
            }
            throw error
        }
        try Recorder.report(outcome, seconds: Date().timeIntervalSince(started))
    }

    /// Opens the pool and says on standard error what opening it salvaged.
    static func openPool(_ path: String) throws -> Pool {
        let pool = try Pool.open(at: path)
        for recording in pool.salvaged {
            CommandLineProgram.printError("note: recovered a capture left by a recorder that died: "
                                          + "\(ByteFormat.human(recording.length)) (\(recording.length) bytes) at \(recording.path)")
        }
        for capture in pool.discarded {
            CommandLineProgram.printError("note: discarded a capture left by a recorder that died before anything was "
                                          + "committed: \(capture.destination) (\(capture.bytesWritten) bytes written, none "
                                          + "durable); no file was made")
        }
        if let failure = pool.repairFailure {
            CommandLineProgram.printError("warning: a capture left by a recorder that died is not recovered yet: "
                                          + "\(failure.message); free space or inodes on the pool's filesystem, then run "
                                          + "`provideo recover`")
        }
        return pool
    }

    static func recover(_ path: String, _ arguments: inout Arguments) throws {
        try arguments.finish()
        let pool = try Pool.open(at: path)
        if let failure = pool.repairFailure { throw failure }
        for recording in pool.salvaged {
            print("recovered \(ByteFormat.human(recording.length)) (\(recording.length) bytes) to \(recording.path)")
        }
        for capture in pool.discarded {
            print("discarded the capture for \(capture.destination): its recorder died before anything was committed "
                  + "(\(capture.bytesWritten) bytes written, none durable); no file was made")
        }
        if pool.salvaged.isEmpty && pool.discarded.isEmpty {
            let earlier = try pool.listing().recovered.count
            print("nothing to recover: no capture was left by a dead recorder"
                  + (earlier > 0 ? " (\(earlier) recovered earlier; `provideo list` shows where they went)" : ""))
        }
    }

    static func list(_ path: String, _ arguments: inout Arguments) throws {
        let json = arguments.flag("--json")
        try arguments.finish()
        let pool = try openPool(path)
        let listing = try pool.listing()
        if json { return try CommandLineProgram.printJSON(listing) }
        if let capture = listing.capture {
            print("capturing → \(capture.destination): \(ByteFormat.human(capture.bytesWritten)) written (pid \(capture.pid))")
        }
        if listing.recordings.isEmpty { print("the pool holds no recordings") }
        for held in listing.recordings {
            print("\(held.path)  \(ByteFormat.human(held.length))  meant for \(held.destination): \(held.reason)")
        }
        LandingLines.printList(listing.landing ?? [])
        for recovered in listing.recovered {
            let when = Date(timeIntervalSince1970: recovered.salvagedAt)
            print("recovered \(when): \(recovered.path) (\(recovered.length) bytes)")
        }
    }

    static func move(_ path: String, _ arguments: inout Arguments) throws {
        let held = try arguments.positional("HELD (a recording `provideo list` shows)")
        let destination = try? arguments.positional("DEST")
        try arguments.finish()
        let target = try openPool(path).moveHeldRecording(held, to: destination)
        print("moved \(held) to \(target); run `provideo replenish` to return the space to the reserve")
    }

    static func check(_ path: String, _ arguments: inout Arguments) throws {
        try arguments.finish()
        let problems = try openPool(path).check()
        if problems.isEmpty {
            print("ok: the pool's accounting matches the disk")
            return
        }
        for problem in problems { print("problem: \(problem)") }
        throw ProVideoError(.corruptState, "the pool at \(path) failed \(problems.count) check(s)")
    }
}

import CommandLineSupport
import Foundation
import Glibc
import ProVideoStorage

/// The admin commands. Each reads its own arguments and prints its result.
enum Commands {
    static func create(_ path: String, _ arguments: inout Arguments) throws {
        guard let text = try arguments.option("--capacity") else { throw UsageError("create needs --capacity SIZE") }
        let capacity = try capacity(text)
        let zero = arguments.flag("--zero")
        let json = arguments.flag("--json")
        let group = try arguments.option("--group")
        let maxCaptures = try arguments.option("--max-captures").map(Captures.maxCaptures)
        let bandwidth = try arguments.option("--bandwidth").map(SizeParser.bitrate)
        let force = arguments.flag("--force")
        try arguments.finish()
        if group?.isEmpty == true { throw UsageError("--group needs a group name") }
        var progress = ProgressLine("zero-filling the reserve", total: capacity)
        let pool = try Pool.create(at: path, capacity: capacity, zeroFill: zero, group: group, maxCaptures: maxCaptures,
                                   bandwidth: bandwidth, progress: { done, total in
            progress.total = total
            progress.update(done)
        }, fstab: fstab, onUnmountedFilesystem: force, systemCalls: .live)
        if zero { progress.finish() }
        let measured = bandwidth == nil ? try Captures.measure(pool) : nil  // nil: given, or too small to measure
        let discard = OnlineDiscard.of(pool.path, grantsByExchange: pool.grantMethod == .extentExchange)
        if json {
            return try CommandLineProgram.printJSON(CommandReports.Capacity(path: pool.path, initialCapacity: pool.initialCapacity,
                                                                            zeroFilled: zero, bandwidth: pool.bandwidth,
                                                                            maxCaptures: pool.maxCaptures, measurement: measured,
                                                                            grants: pool.grantMethod.rawValue, onlineDiscard: discard))
        }
        let created = try pool.initialCapacity
        print("created a pool of \(ByteFormat.human(created)) (\(created) bytes) at \(pool.path)")
        print("grants: \(pool.grantMethod.rawValue)" + (pool.grantsNote.map { " (\($0.terminalSafe))" } ?? ""))
        if let discard { print("note: \(discard.message.terminalSafe)") }
        if let measured {
            print(Captures.sentence(measured))
        } else if bandwidth == nil {
            print("the pool is too small to measure its bandwidth: captures are not admitted against one "
                  + "(`provideo set-bandwidth RATE` sets it)")
        }
    }

    static func status(_ path: String, _ arguments: inout Arguments) throws {
        let json = arguments.flag("--json")
        let exactBytes = arguments.flag("--bytes")
        let parsable = ParsableOptions.read(&arguments)
        let rate = try RecordingRate.read(&arguments)
        let watch = try arguments.optionalNumber("--watch", whenBare: "1")
        try arguments.finish()
        if parsable.any && (json || watch != nil) {
            throw UsageError("-H and -p print one table; they do not go with \(json ? "--json" : "--watch")")
        }
        if let watch {
            guard let interval = Double(watch), interval >= 0.1, interval <= 86_400 else {
                throw UsageError("--watch takes seconds between views, from 0.1 to 86400, not '\(watch)'")
            }
            if json { throw UsageError("--watch redraws the human view; for scripts, use `provideo metrics` or status --json") }
            return try StatusWatch(pool: try openPool(path, lookingOnly: true), interval: interval, rate: rate, exactBytes: exactBytes).run()
        }
        let status = try openPool(path, lookingOnly: true).status()
        if json { return try CommandLineProgram.printJSON(StatusReport(status: status, rate: rate)) }
        if parsable.any { return print(ParsableViews(options: parsable).status(status, rate: rate), terminator: "") }
        print(StatusView(status: status, rate: rate, exactBytes: exactBytes).lines.joined(separator: "\n"))
    }

    /// `metrics`: the pool's state in the Prometheus text format, on standard output or
    /// published whole at `--output FILE` (`MetricsFile`); `--json`: the same samples as JSON.
    static func metrics(_ path: String, _ arguments: inout Arguments) throws {
        let output = try arguments.option("--output")
        let json = arguments.flag("--json")
        try arguments.finish()
        if output?.isEmpty == true { throw UsageError("--output needs a file name, e.g. /var/lib/node_exporter/provideo.prom") }
        if json && output != nil { throw UsageError("--json prints the samples; it does not go with --output") }
        let pool = try openPool(path, lookingOnly: true)
        let metrics = Metrics(status: try pool.status(), listing: try pool.listing(), deadCaptures: try pool.deadCaptures().count)
        if json { return try CommandLineProgram.printJSON(metrics.json) }
        let text = metrics.text
        guard let output else { return print(text, terminator: "") }
        try MetricsFile.publish(text, at: output)
    }

    /// `codecs`: every name `status --codec` takes, with its bitrate.
    static func codecs(_ arguments: inout Arguments) throws {
        let json = arguments.flag("--json")
        try arguments.finish()
        if json {
            return try CommandLineProgram.printJSON(CodecTable.all)
        }
        for codec in CodecTable.all {
            let rate = codec.frameRate
            let fraction = rate.denominator == 1 ? "\(rate.numerator)" : "\(rate.numerator)/\(rate.denominator)"
            print(codec.name.padding(toLength: 28, withPad: " ", startingAt: 0)
                  + TimeFormat.bitrate(codec.bitrate).padding(toLength: 14, withPad: " ", startingAt: 0) + fraction + " fps")
        }
        print("sources: Apple ProRes White Paper, April 2022 (target data rates; the 1000/1001 rates are the integer "
              + "rates' figures × 1000/1001); Avid DNxHR Codec Bandwidth Specifications (bytes per frame × frame rate)")
    }

    static func resize(_ path: String, _ arguments: inout Arguments) throws {
        let json = arguments.flag("--json")
        let capacity = try capacity(try arguments.positional("SIZE"))
        try arguments.finish()
        let size = try openPool(path).resize(to: capacity)
        if json { return try CommandLineProgram.printJSON(CommandReports.Capacity(path: path, initialCapacity: size)) }
        print("the pool's capacity is now \(ByteFormat.human(size)) (\(size) bytes)")
    }

    static func replenish(_ path: String, _ arguments: inout Arguments) throws {
        let json = arguments.flag("--json")
        try arguments.finish()
        let result = try openPool(path).replenish()
        if json {
            return try CommandLineProgram.printJSON(CommandReports.Replenish(
                path: path, added: result.added, missing: result.missing, remainingCapacity: result.remainingCapacity))
        }
        if result.missing == 0 {
            print("replenished: added \(ByteFormat.human(result.added)); remaining capacity \(ByteFormat.human(result.remainingCapacity))")
        } else {
            print("replenished partly: added \(ByteFormat.human(result.added)), still \(ByteFormat.human(result.missing)) short "
                  + "of the capacity; free space on the filesystem and run replenish again")
        }
    }

    static func destroy(_ path: String, _ arguments: inout Arguments) throws {
        let json = arguments.flag("--json")
        try arguments.finish()
        var remainsOnly = false
        do {
            try openPool(path).destroy(fstab: fstab)
        } catch let error as ProVideoError where error.code == .poolNotFound {
            guard try Pool.removeRemains(at: path, fstab: fstab) else {
                throw ProVideoError(.poolNotFound, "no pool at \(path): nothing to destroy", path: path)
            }
            remainsOnly = true
        }
        if json { return try CommandLineProgram.printJSON(CommandReports.Destroy(path: path, removedRemainsOnly: remainsOnly)) }
        print(remainsOnly ? "removed what an interrupted destroy left at \(path)" : "destroyed the pool at \(path)")
    }

    static func record(_ path: String, _ arguments: inout Arguments) throws {
        var options = CaptureOptions()
        if let rate = try arguments.option("--bitrate") { options.bitrate = try SizeParser.videoBitrate(rate) }
        switch try arguments.option("--overrun") {
        case nil, "wait": break
        case "fail": options.overrunPolicy = .fail
        case let other?: throw UsageError("--overrun takes wait or fail, not '\(other)'")
        }
        options.admitOverBandwidth = arguments.flag("--force")
        if let text = try arguments.option("--durability") {
            guard let seconds = Double(text), seconds.isFinite, (0...3600).contains(seconds) else {
                throw UsageError("--durability takes seconds from 0 to 3600, e.g. 1 or 0.5; not '\(text)'")
            }
            options.durabilityInterval = UInt64(seconds * 1e9)
        }
        if let mode = try arguments.option("--land") {
            guard let landing = LandingMode(rawValue: mode == "auto" ? "automatic" : mode) else {
                throw UsageError("--land takes auto, finish or background, not '\(mode)'")
            }
            options.landing = landing
        }
        let json = arguments.flag("--json")
        let replenish = arguments.flag("--replenish")
        let destination = try arguments.positional("DEST")
        try arguments.finish()
        // An empty word would resolve to the current directory and be refused as existing,
        // which hides the typing mistake (an unset shell variable, most often).
        if destination.isEmpty { throw UsageError("record needs a destination path (DEST), e.g. /media/card/take1.mov; got ''") }
        let pool = try openPool(path)
        let capture = try pool.startCapture(to: destination, options: options)
        StopSignals.install(restart: false)
        let outcome: Recorder.Outcome
        let copyProgress = CopyProgressDisplay()
        defer { copyProgress.stop() }
        do {
            outcome = try Recorder.capture(from: 0, into: capture, finishing: copyProgress.control)
            copyProgress.stop()  // its last line before the summary
        } catch var error as ProVideoError where error.code == .ioError || error.code == .notEnoughSpace {
            // The capture failed and let go of the pool: salvage its committed part right now, so
            // the take is at its destination without waiting for a later command.
            if let salvaged = (try? Pool.open(at: path))?.salvaged.first {
                error.message += "; salvaged \(ByteFormat.human(salvaged.length)) (\(salvaged.length) bytes) to \(salvaged.path)"
                error.remedies.removeAll { $0 == .recover }
            }
            throw error
        }
        try Recorder.report(outcome, poolPath: path, json: json, reserve: reserveAfter(outcome.result, pool, replenish: replenish))
    }

    /// What a take left on the pool's filesystem did to the reserve (nil for one copied to
    /// another filesystem or landing in the background: it took nothing for good), after
    /// `replenish` (`record --replenish`) when asked. A replenish that fails is a warning: the
    /// recording is whole either way.
    private static func reserveAfter(_ result: RecordingResult, _ pool: Pool, replenish: Bool) -> Recorder.ReserveNote? {
        guard result.landingTo == nil, !Recorder.wasCopied(result, poolPath: pool.path) else { return nil }
        var replenished: ReplenishResult?
        if replenish {
            do {
                replenished = try pool.replenish()
            } catch let error as ProVideoError {
                CommandLineProgram.printError("warning: the recording is whole, but replenishing the reserve failed: "
                                              + "\(error.message.terminalSafe); run `provideo replenish` later")
            } catch {
                CommandLineProgram.printError("warning: replenishing the reserve failed: \(error)")
            }
        }
        // A note after the recording: when a figure cannot be read there is no note, not a wrong one.
        guard let remaining = replenished?.remainingCapacity ?? (try? pool.remainingCapacity),
              let capacity = try? pool.initialCapacity else { return nil }
        return Recorder.ReserveNote(remainingCapacity: remaining, capacity: capacity, replenished: replenished)
    }

    /// The fstab naming the mount points a pool must not be created beneath while unmounted,
    /// nor removed with one: /etc/fstab; in a debug build, `PROVIDEO_FSTAB` when set, so that
    /// the tests can name a mount point without editing the system's table.
    static var fstab: String {
        #if DEBUG
        if let path = ProcessInfo.processInfo.environment["PROVIDEO_FSTAB"], !path.isEmpty { return path }
        #endif
        return FstabEntry.systemTable
    }

    /// A capacity as typed, at least `Pool.minimumCapacity` and at most `Pool.maximumCapacity`.
    static func capacity(_ text: String) throws -> Int64 {
        let bytes = try SizeParser.bytes(text)
        // Refused here with the parser's own words for a size past 63 bits, rather than as the
        // library's invalidArgument (exit 1): it is a typing mistake, a usage error.
        guard bytes <= Pool.maximumCapacity else {
            throw UsageError("invalid size '\(text)': too large (the limit is \(Pool.maximumCapacity) bytes)")
        }
        guard bytes >= Pool.minimumCapacity else {
            throw UsageError("a capacity of \(bytes) bytes is too small: the minimum is "
                             + "\(ByteFormat.human(Pool.minimumCapacity)) (\(Pool.minimumCapacity) bytes), one capture write")
        }
        return bytes
    }

    /// Opens the pool and says on standard error what opening it salvaged. `lookingOnly`: for
    /// the commands that only look at the pool (status, list, metrics, check), which salvage
    /// nothing (a root monitoring job never places takes) and say what waits for `recover`.
    static func openPool(_ path: String, lookingOnly: Bool = false) throws -> Pool {
        let pool = try Pool.open(at: path, systemCalls: .live, salvaging: !lookingOnly, fstab: fstab)
        if let entry = FstabEntry.unmounted(holding: pool.path, table: fstab) {
            CommandLineProgram.printError("warning: \(entry.notMounted(pool.path, table: fstab)); this pool is there, "
                                          + "and hidden once `mount \(entry.mountPoint)` mounts it")
        }
        if lookingOnly && pool.isReadOnly {
            CommandLineProgram.printError("note: the pool's filesystem is read-only: the pool can be read, not changed "
                                          + "(no capture can start, nothing can be salvaged or replenished)")
        }
        let dead = lookingOnly ? try pool.deadCaptures() : []
        if !dead.isEmpty {
            CommandLineProgram.printError("note: \(dead.count) capture(s) left by recorders that died wait to be "
                                          + "salvaged (\(dead.map(\.terminalSafe).joined(separator: ", "))); their committed bytes are kept: "
                                          + "run `provideo recover` (the recovery unit, `provideo land` and the next "
                                          + "capture start do it too)")
        }
        if lookingOnly {
            let status = try pool.status()
            for entry in status.strayEntries ?? [] {
                CommandLineProgram.printError("warning: \(pool.path.terminalSafe)/captures/\(entry.name.terminalSafe) is "
                                              + "\(entry.type), not a capture: nothing uses it; remove it")
            }
            for entry in status.undecided ?? [] {
                CommandLineProgram.printError("warning: \(pool.path.terminalSafe)/captures/\(entry.id.terminalSafe) may be a "
                                              + "running capture and cannot be read: \(entry.reason.terminalSafe); remove it "
                                              + "if it is not a capture")
            }
        }
        for recording in pool.salvaged {
            CommandLineProgram.printError("note: recovered a capture left by a recorder that died: "
                                          + "\(ByteFormat.human(recording.length)) (\(recording.length) bytes) at \(recording.path.terminalSafe)")
        }
        for capture in pool.discarded {
            CommandLineProgram.printError("note: discarded a capture left by a recorder that died before anything was "
                                          + "committed: \(capture.destination.terminalSafe) (\(capture.bytesWritten.map { "\($0) bytes" } ?? "an unknown number of bytes") written, none "
                                          + "durable); no file was made")
        }
        for refused in pool.unsalvageable {
            // `.busy`: its recorder may be alive, so it is not known to be left by one that died.
            CommandLineProgram.printError(refused.code == .busy ? "warning: \(refused.advised.terminalSafe)"
                                          : "warning: a capture left by a recorder that died cannot be salvaged: "
                                          + refused.advised.terminalSafe)
        }
        if let failure = pool.repairFailure {
            CommandLineProgram.printError("warning: a capture left by a recorder that died is not recovered yet: "
                                          + "\(failure.message.terminalSafe); free space or inodes on the pool's filesystem, then run "
                                          + "`provideo recover`")
        }
        return pool
    }

    static func recover(_ path: String, _ arguments: inout Arguments) throws {
        let json = arguments.flag("--json")
        let salvageTo = try arguments.option("--salvage-to")
        try arguments.finish()
        if salvageTo?.isEmpty == true { throw UsageError("--salvage-to needs a directory") }
        // Waiting for a change of the pool in progress: a salvage skipped for it would read as
        // "nothing to recover".
        let pool = try Pool.open(at: path, systemCalls: .live, waitingForTheLock: true, fstab: fstab)
        try pool.requireWritable()  // else nothing is salvaged, and "nothing to recover" would be untrue
        if let failure = pool.repairFailure { throw failure }
        if let salvageTo { _ = try pool.salvageWithoutJournal(into: salvageTo) }
        for recording in pool.salvaged where recording.note != nil {
            CommandLineProgram.printError("note: \(recording.path.terminalSafe): \(recording.note!.terminalSafe)")
        }
        // What `--salvage-to` placed is gone from captures/; what is left stays refused.
        let left = pool.unsalvageable.filter { error in
            error.path.map { FileManager.default.fileExists(atPath: ($0 as NSString).deletingLastPathComponent) } ?? true
        }
        // One whose recorder may be alive is left for later, and said; the others are failures.
        for undecided in left where undecided.code == .busy {
            CommandLineProgram.printError("note: \(undecided.advised.terminalSafe)")
        }
        let refused = left.filter { $0.code != .busy }
        if let refused = refused.first {
            for recording in pool.salvaged {
                CommandLineProgram.printError("recovered \(ByteFormat.human(recording.length)) (\(recording.length) bytes) "
                                              + "to \(recording.path.terminalSafe)")
            }
            throw refused
        }
        if json {
            return try CommandLineProgram.printJSON(CommandReports.Recover(
                path: path, salvaged: pool.salvaged, discarded: pool.discarded,
                recoveredEarlier: recoveredEarlier(pool).map { max($0 - pool.salvaged.count, 0) }))
        }
        for recording in pool.salvaged {
            print("recovered \(ByteFormat.human(recording.length)) (\(recording.length) bytes) to \(recording.path.terminalSafe)")
        }
        for capture in pool.discarded {
            print("discarded the capture for \(capture.destination.terminalSafe): its recorder died before anything was committed "
                  + "(\(capture.bytesWritten.map { "\($0) bytes" } ?? "an unknown number of bytes") written, none durable); no file was made")
        }
        if pool.salvaged.isEmpty && pool.discarded.isEmpty {
            let earlier = recoveredEarlier(pool) ?? 0
            print("nothing to recover: no capture was left by a dead recorder"
                  + (earlier > 0 ? " (\(earlier) recovered earlier; `provideo list` shows where they went)" : ""))
        }
    }

    /// Entries in the salvage log, nil (said on stderr) when it cannot be read. Only the log:
    /// a recovery that left a capture undecided (its progress unreadable) still reports.
    static func recoveredEarlier(_ pool: Pool) -> Int? {
        do {
            return try pool.recoveredRecordings().count
        } catch {
            let message = (error as? ProVideoError)?.advised ?? "\(error)"
            CommandLineProgram.printError("warning: \(message.terminalSafe); recoveries made earlier are not counted")
            return nil
        }
    }

    static func list(_ path: String, _ arguments: inout Arguments) throws {
        let json = arguments.flag("--json")
        let parsable = ParsableOptions.read(&arguments)
        try arguments.finish()
        if parsable.any && json { throw UsageError("-H and -p print a table; they do not go with --json") }
        let pool = try openPool(path, lookingOnly: true)
        let listing = try pool.listing()
        if json { return try CommandLineProgram.printJSON(listing) }
        if parsable.any { return print(ParsableViews(options: parsable).list(listing), terminator: "") }
        for capture in listing.captures { print(Captures.line(capture, size: ByteFormat.significant)) }
        if listing.recordings.isEmpty { print("the pool holds no recordings") }
        for held in listing.recordings {
            print("\(held.path.terminalSafe)  \(ByteFormat.human(held.length))  meant for "
                  + "\(held.destination.terminalSafe): \(held.reason.terminalSafe)")
        }
        LandingLines.printList(listing.landing ?? [], waitsForFleetSlot: listing.landingWaitsForFleetSlot == true)
        for recovered in listing.recovered { print(recoveredLine(recovered)) }
        if let unreadable = listing.recoveredUnreadable {
            CommandLineProgram.printError("warning: \(unreadable.terminalSafe); the recordings it lists are not shown")
        }
    }

    /// "recovered 2025-01-02 03:04:05 +0000: PATH (N bytes)": one entry of the salvage log,
    /// `recovered.json`, which any pool member may write. Its path is escaped (`TerminalText`);
    /// a time or a length no salvage could have written is called corrupt, not shown (`list
    /// --json` gives the entry as the file holds it).
    static func recoveredLine(_ recovered: SalvagedRecording) -> String {
        let when = recovered.salvagedAt.isFinite && (0...1e11).contains(recovered.salvagedAt)
            ? "\(Date(timeIntervalSince1970: recovered.salvagedAt))"
            : "at an unknown time (its salvagedAt in recovered.json is corrupt)"
        let length = (0...Pool.maximumCapacity).contains(recovered.length) ? "\(recovered.length) bytes"
            : "length unknown: its length in recovered.json is corrupt"
        return "recovered \(when): \(recovered.path.terminalSafe) (\(length))"
    }

    static func move(_ path: String, _ arguments: inout Arguments) throws {
        let json = arguments.flag("--json")
        let held = try arguments.positional("HELD (a recording `provideo list` shows)")
        let destination = try? arguments.positional("DEST")
        try arguments.finish()
        if destination?.isEmpty == true {
            throw UsageError("move needs a destination path (DEST), or none to move it where it was meant to go; got ''")
        }
        let copyProgress = CopyProgressDisplay()
        let target = try openPool(path).moveHeldRecording(held, to: destination, control: copyProgress.control)
        copyProgress.stop()
        if json { return try CommandLineProgram.printJSON(CommandReports.Move(held: held, path: target)) }
        print("moved \(held.terminalSafe) to \(target.terminalSafe); run `provideo replenish` to return the space to the reserve")
    }

    static func check(_ path: String, _ arguments: inout Arguments) throws {
        let json = arguments.flag("--json")
        try arguments.finish()
        let pool = try openPool(path, lookingOnly: true)
        let problems = try pool.check()
        // Not a problem of the pool's accounting, but what limits its streams: said beside it.
        let discard = OnlineDiscard.of(pool.path, grantsByExchange: pool.grantMethod == .extentExchange)
        if json {
            try CommandLineProgram.printJSON(CommandReports.Check(path: path, ok: problems.isEmpty, problems: problems,
                                                                  onlineDiscard: discard))
        } else {
            if problems.isEmpty { print("ok: the pool's accounting matches the disk") }
            for problem in problems { print("problem: \(problem.terminalSafe)") }
            if let discard { print("note: \(discard.message.terminalSafe)") }
        }
        if problems.isEmpty { return }
        throw ProVideoError(.corruptState, "the pool at \(path) failed \(problems.count) check(s)")
    }
}

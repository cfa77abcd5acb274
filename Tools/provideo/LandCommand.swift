import CommandLineSupport
import Foundation
import Glibc
import ProVideoStorage

/// `provideo land [--watch] [--parallel N] [--rate RATE] [--fleet FILE [--slots N] [--fleet-rate RATE]]
/// [--retry SECONDS] [--interval SECONDS] [--json]`: lands the recordings waiting in the pool
/// (see `Pool.landPending`; a fleet's budget, `FleetSlots`).
enum LandCommand {
    static func run(_ path: String, _ arguments: inout Arguments) throws {
        let watch = arguments.flag("--watch")
        let json = arguments.flag("--json")
        let parallel = try positiveNumber(arguments.option("--parallel"), "--parallel", default: 1, limit: 64)
        let retry = try positiveNumber(arguments.option("--retry"), "--retry", default: 5.0, limit: 86_400)
        let interval = try positiveNumber(arguments.option("--interval"), "--interval", default: 5.0, limit: 86_400)
        // RATE in bits per second, as every rate the CLI takes; the transfer counts bytes.
        let rate = try arguments.option("--rate").map { try SizeParser.bitrate($0) / 8 }
        let fleetFile = try arguments.option("--fleet")
        let slotsText = try arguments.option("--slots")
        let slots = try positiveNumber(slotsText, "--slots", default: 1, limit: FleetSlots.maximumSlots)
        let fleetRate = try arguments.option("--fleet-rate").map { try SizeParser.bitrate($0) / 8 }
        try arguments.finish()
        if rate == 0 { throw UsageError("--rate must be more than 0 (200M = 200 Mbit/s)") }
        if fleetRate == 0 { throw UsageError("--fleet-rate must be more than 0 (2G = 2 Gbit/s)") }
        if fleetFile == nil && (slotsText != nil || fleetRate != nil) {
            throw UsageError("--slots and --fleet-rate share a fleet's budget: give --fleet FILE too")
        }
        if let fleetFile, !fleetFile.hasPrefix("/") {
            throw UsageError("--fleet takes an absolute path on the shared store, not '\(fleetFile)'")
        }
        let fleet = try fleetFile.map { try FleetSlots(file: $0, slots: slots, rate: fleetRate) }
        StopSignals.install(restart: true)
        let stop: @Sendable () -> Bool = { StopSignals.requested }
        let pool = try Commands.openPool(path)
        let pending = try !pool.landings().isEmpty
        if watch || pending, let note = SchedulerLines.landNote(pool.ioSchedulers, capped: rate != nil, bandwidth: try pool.bandwidth) {
            CommandLineProgram.printError(note)
        }
        let progress = LandProgressDisplay()
        guard watch else {
            let results = try pool.landPending(parallel: Int(parallel), rate: rate, retryAfter: retry, shouldStop: stop,
                                               observer: progress.observer, fleet: fleet)
            // One run, one JSON document: a list of the takes tried, `[]` when there was none
            // (an empty output is not JSON). Only --watch, which never ends, streams lines.
            if json {
                // The pretty printer writes an empty list over three lines.
                if results.isEmpty { print("[]") } else { try CommandLineProgram.printJSON(results) }
            } else {
                try report(results, json: false)
            }
            if results.isEmpty && !json {
                print(try pool.landings().isEmpty ? "nothing to land"
                      : "every recording waiting to land is being landed by another process")
            }
            let failed = results.filter { !$0.landed }
            if !failed.isEmpty {
                throw ProVideoError(.ioError, "\(failed.count) recording(s) did not land; they stay in the pool "
                                    + "(`provideo list` shows why) and `provideo land` tries them again")
            }
            return
        }
        while !stop() {
            let results = try pool.landPending(parallel: Int(parallel), rate: rate, dueOnly: true, retryAfter: retry,
                                               shouldStop: stop, observer: progress.observer, fleet: fleet)
            try report(results, json: json)
            for _ in 0..<Int(interval * 10) where !stop() { usleep(100_000) }
        }
    }

    /// One line per result (one JSON object per line with --json, for --watch), on standard output.
    private static func report(_ results: [LandingResult], json: Bool) throws {
        for result in results {
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                print(String(decoding: try encoder.encode(result), as: UTF8.self))
            } else if result.landed {
                print("landed \(ByteFormat.human(result.length)) (\(result.length) bytes) at \(result.destination.terminalSafe)")
                if let failure = result.reserveNotRefilled { CommandLineProgram.printError("warning: " + failure.terminalSafe) }
            } else if result.destination.isEmpty {
                // Its note cannot be read: no destination to try again.
                CommandLineProgram.printError("did not land \(result.path.terminalSafe): "
                                              + "\((result.error ?? "unknown error").terminalSafe)")
            } else {
                CommandLineProgram.printError("did not land \(result.path.terminalSafe) at \(result.destination.terminalSafe): "
                                              + "\((result.error ?? "unknown error").terminalSafe); it stays in the pool and is retried")
            }
            fflush(nil)
        }
    }

    /// A number more than 0 and at most `limit` (a count of transfers, or seconds: a day): a
    /// larger one, infinity or NaN would trap where it is turned into a wait.
    private static func positiveNumber<T: LosslessStringConvertible & Comparable & Numeric>(
        _ text: String?, _ name: String, default value: T, limit: T) throws -> T {
        guard let text else { return value }
        guard let number = T(text), number > 0, number <= limit else {
            throw UsageError("\(name) takes a number more than 0 and at most \(limit), not '\(text)'")
        }
        return number
    }
}

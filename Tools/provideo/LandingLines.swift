import CommandLineSupport
import Foundation
import ProVideoStorage

/// The landing lines `status` and `list` add to their human output.
enum LandingLines {
    /// The lines `status` adds (none when nothing waits to land).
    static func status(_ status: PoolStatus) -> [String] {
        let landing = status.landing ?? []
        guard !landing.isEmpty else { return status.landingWaitsForFleetSlot == true ? [fleetWait] : [] }
        return ["landing     \(landing.count) recording(s), \(ByteFormat.human(status.landingBytes ?? 0)) held in the pool "
                + "until they land (`provideo land`)"] + (status.landingWaitsForFleetSlot == true ? [fleetWait] : [])
            + landing.map { "            " + describe($0) }
    }

    /// A lander of this pool waits for a slot of the fleet's landing budget (`land --fleet`).
    static let fleetWait = "            a lander waits for a fleet slot: every slot of its fleet's budget is taken by "
        + "other transfers (`land --fleet`)"

    static func printList(_ landing: [LandingProgress], waitsForFleetSlot: Bool) {
        if waitsForFleetSlot { print("landing waits for a fleet slot (`land --fleet`): every slot is taken") }
        for progress in landing { print("landing \(progress.path.terminalSafe): " + describe(progress)) }
    }

    /// "→ DEST: 1.2 GiB of 2.0 GiB (60%), 180.0 MiB/s, 5 s left" and the last error, if any.
    /// The destination and the error are a pool member's text, escaped (`TerminalText`); a
    /// number no conversion can take shows as unknown, never as a trap.
    static func describe(_ progress: LandingProgress) -> String {
        let share = progress.length > 0 ? Double(progress.landedBytes) * 100 / Double(progress.length) : 100
        let percent = Int(checked: min(max(share, 0), 100)).map { "\($0)%" } ?? "?%"
        var line = "→ \(progress.destination.terminalSafe): \(ByteFormat.human(progress.landedBytes)) of "
            + "\(ByteFormat.human(progress.length)) (\(percent))"
        switch (progress.transferring, progress.bytesPerSecond) {
        case (true, let rate?):
            line += Int64(checked: rate).map { ", \(ByteFormat.human($0))/s" } ?? ", rate unknown"
            if let eta = progress.etaSeconds, eta.isFinite { line += String(format: ", %.0f s left", eta) }
        case (true, nil): line += ", transferring"
        case (false, _): line += ", waiting"
        case (nil, _):
            line += "; whether it is transferring is unknown (\((progress.transferringUnknown ?? "no reason given").terminalSafe))"
        }
        if let error = progress.lastError {
            line += "; attempt \(progress.attempts) failed: \(error.terminalSafe)"
            if let next = progress.nextAttemptAt, next.isFinite {
                line += String(format: " (next in %.0f s)", max(next - Date().timeIntervalSince1970, 0))
            }
        }
        return line
    }
}

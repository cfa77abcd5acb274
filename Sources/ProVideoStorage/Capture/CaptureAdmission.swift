import ProVideoSystem
import ProVideoJournal

/// Whether one more capture may start beside the running ones: the pool's capture limit and
/// its bandwidth, the way SGI's XFS guaranteed-rate I/O reserved bandwidth per stream. A value
/// made from the pool's configuration as read under the mutation lock (`startCapture`), so
/// that every start decides on the limits of that moment.
package struct CaptureAdmission {
    /// The share of the pool's measured bandwidth that captures may declare together: the
    /// rest is headroom for the device's stalls, the commits' fdatasync and the filesystem's
    /// own writes (the measurement is a short sequential write, the best case).
    package static let admissibleShare = 0.8

    /// The most captures that may run at once (`provideo create --max-captures`); nil for no limit.
    let captureLimit: Int?
    /// The pool's measured bandwidth in bits per second; nil when it was never measured.
    let bandwidth: Int64?
    /// The pool's path and its `captures/`, for the errors.
    let poolPath: String
    let capturesDirectory: String

    /// Admits a capture beside `running` ones, or throws why not; marks the journal when it is
    /// admitted over the bandwidth.
    /// - Throws: `.busy` when `captureLimit` captures run; `.bandwidthExceeded` with the numbers.
    func admit(_ options: CaptureOptions, running: [(files: CaptureFiles, journal: CaptureJournal)],
               undecided: [UndecidedCapture] = [], journal: inout CaptureJournal) throws {
        if let limit = captureLimit, running.count >= limit {
            let who = running.map { "process \($0.journal.pid) is recording to \($0.journal.destination)" }
                .joined(separator: ", ")
            throw ProVideoError(.busy, "cannot start a capture: the pool is busy (capturing); \(who). This pool takes "
                                + "\(limit) capture(s) at a time (the limit it was created with): record the stream "
                                + "into another pool, or create the pool again without the limit", path: poolPath)
        }
        // A capture alone has the device to itself and is admitted whatever its bitrate: the
        // bandwidth is a short measurement, and a stream it cannot carry shows as overruns.
        if bandwidth != nil, let first = undecided.first {
            // An entry that may be a live recorder declares a bandwidth no one can read.
            guard options.admitOverBandwidth else {
                throw ProVideoError(.bandwidthExceeded, "cannot count the bandwidth in use: \(undecided.count) entr"
                                    + "\(undecided.count == 1 ? "y" : "ies") of \(capturesDirectory) may be running and cannot be "
                                    + "read (\(first.id): \(first.reason)); remove what is not a capture, or start it anyway "
                                    + "and risk dropped frames", path: capturesDirectory + "/" + first.id,
                                    remedies: [.admitOverBandwidth])
            }
            journal.admittedOverBandwidth = true
        }
        guard let bandwidth, !running.isEmpty else { return }
        let admissible = Int64(Double(bandwidth) * Self.admissibleShare)
        let declared = running.map(\.journal.bitrate).saturatingSum()
        guard [declared, options.bitrate].saturatingSum() > admissible else { return }
        guard options.admitOverBandwidth else {
            // What was refused and why come first: the numbers after them.
            throw ProVideoError(.bandwidthExceeded, "not enough bandwidth to start a capture at "
                                + "\(BitRateFormat.human(options.bitrate)): the running captures "
                                + "(\(Self.describe(running.map(\.journal.bitrate)))) declare \(BitRateFormat.human(declared)) "
                                + "of the \(BitRateFormat.human(admissible)) admissible "
                                + "(\(Int(Self.admissibleShare * 100))% of the pool's bandwidth, \(BitRateFormat.human(bandwidth))), "
                                + "and this one would take them to "
                                + "\(BitRateFormat.human([declared, options.bitrate].saturatingSum())). Record it into another "
                                + "pool, lower its bitrate, or start it anyway and risk dropped frames",
                                path: poolPath, remedies: [.admitOverBandwidth])
        }
        journal.admittedOverBandwidth = true
    }

    /// "3 × 880 Mbit/s", "400 Mbit/s + 200 Mbit/s", "no capture".
    private static func describe(_ bitrates: [Int64]) -> String {
        guard let first = bitrates.first else { return "no capture" }
        if bitrates.allSatisfy({ $0 == first }) {
            return bitrates.count == 1 ? BitRateFormat.human(first) : "\(bitrates.count) × \(BitRateFormat.human(first))"
        }
        return bitrates.map(BitRateFormat.human).joined(separator: " + ")
    }
}

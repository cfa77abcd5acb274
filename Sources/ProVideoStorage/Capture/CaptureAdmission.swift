import Foundation
import ProVideoSystem
import ProVideoJournal

/// Which captures run in a pool, and whether one more may start: the pool's `maxCaptures`
/// and its bandwidth, the way SGI's XFS guaranteed-rate I/O reserved bandwidth per stream.
extension Pool {
    /// The share of the pool's measured bandwidth that captures may declare together: the
    /// rest is headroom for the device's stalls, the commits' fdatasync and the filesystem's
    /// own writes (the measurement is a short sequential write, the best case).
    package static let admissibleShare = 0.8

    /// The most entries `captures/` may hold: `maxCaptures` is at most 4096, and each dead
    /// capture waits for a salvage; more is a planted flood, refused before any work on it.
    static let captureEntriesLimit = 16_384

    /// The files of every capture in the pool, running or dead, in a stable order.
    /// - Throws: `.ioError` when `captures/` exists but cannot be listed, or cannot be looked at
    ///   (`FileSystem.isPresent`): an empty answer there would let a replenish grow the reserve
    ///   into running captures' grants.
    func captureFiles() throws -> [CaptureFiles] {
        guard let names = try FileSystem.entries(layout.captures, consequence: "nothing was changed") else { return [] }
        guard names.count <= Self.captureEntriesLimit else {
            throw ProVideoError(.corruptState, "\(layout.captures) holds \(names.count) entries, more than a pool ever "
                                + "makes (\(Self.captureEntriesLimit)); nothing was changed: remove what is not a capture",
                                path: layout.captures)
        }
        return names.sorted().map { layout.capture($0) }
    }

    /// The journals of the captures whose owner is alive, in this process or another (one
    /// still writing its first journal, or removing its files, is not counted).
    func runningCaptures() throws -> [(files: CaptureFiles, journal: CaptureJournal)] { try captureCensus().running }

    /// The captures whose owner is alive, with their journals, and the entries of `captures/`
    /// that may be alive and cannot be counted: their liveness cannot be read (a stray file or
    /// link, EMFILE), or their journal cannot. Neither list is a reason to refuse the pool;
    /// admission counts the second as bandwidth unknown (`admit`).
    /// - Throws: `.ioError` when `captures/` cannot be listed.
    func captureCensus() throws -> (running: [(files: CaptureFiles, journal: CaptureJournal)], undecided: [UndecidedCapture]) {
        var running: [(files: CaptureFiles, journal: CaptureJournal)] = []
        var undecided: [UndecidedCapture] = []
        for files in try captureFiles() {
            switch CaptureClaim.liveness(files, calls) {
            case .dead: continue
            case .unknown(let error):
                undecided.append(UndecidedCapture(id: files.id, reason: "whether its recorder is alive cannot be read (\(error.message))"))
            case .alive:
                do {
                    running.append((files, try CaptureJournal.load(files.journal)))
                } catch let error as ProVideoError where error.errno == ENOENT {
                    continue
                } catch {
                    let message = (error as? ProVideoError)?.message ?? "\(error)"
                    undecided.append(UndecidedCapture(id: files.id, reason: "its recorder is alive and its journal cannot be read (\(message))"))
                }
            }
        }
        return (running, undecided)
    }

    /// Admits a capture beside `running` ones, or throws why not; marks the journal when it is
    /// admitted over the bandwidth.
    /// - Throws: `.busy` when `maxCaptures` captures run; `.bandwidthExceeded` with the numbers.
    func admit(_ options: CaptureOptions, running: [(files: CaptureFiles, journal: CaptureJournal)],
               undecided: [UndecidedCapture] = [], journal: inout CaptureJournal) throws {
        if let limit = configuration.captureLimit, running.count >= limit {
            let who = running.map { "process \($0.journal.pid) is recording to \($0.journal.destination)" }
                .joined(separator: ", ")
            throw ProVideoError(.busy, "cannot start a capture: the pool is busy (capturing); \(who). This pool takes "
                                + "\(limit) capture(s) at a time (`provideo create --max-captures`): record the stream "
                                + "into another pool, or create the pool again without the limit", path: path)
        }
        // A capture alone has the device to itself and is admitted whatever its bitrate: the
        // bandwidth is a short measurement, and a stream it cannot carry shows as overruns.
        if configuration.bandwidth != nil, let first = undecided.first {
            // An entry that may be a live recorder declares a bandwidth no one can read.
            guard options.admitOverBandwidth else {
                throw ProVideoError(.bandwidthExceeded, "cannot count the bandwidth in use: \(undecided.count) entr"
                                    + "\(undecided.count == 1 ? "y" : "ies") of \(layout.captures) may be running and cannot be "
                                    + "read (\(first.id): \(first.reason)); remove what is not a capture, or start it anyway "
                                    + "(`record --force`) and risk dropped frames", path: layout.captures + "/" + first.id)
            }
            journal.admittedOverBandwidth = true
        }
        guard let bandwidth = configuration.bandwidth, !running.isEmpty else { return }
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
                                + "pool, lower its bitrate, or start it anyway (`record --force`) and risk dropped frames",
                                path: path)
        }
        journal.admittedOverBandwidth = true
    }

    /// One destination per take: refuses a start whose `destination` is that of a running
    /// capture or of a take waiting to land, since one of the two would end held in the pool
    /// with "appeared while recording". Destinations are compared as directory entries
    /// (`DestinationIdentity`: the directory's device and inode, and the name; a bind mount of
    /// the directory is the same entry), under the mutation lock, so two starts in any
    /// processes cannot both pass.
    /// - Throws: `.busy` naming the capture or the take that has the destination;
    ///   `.destinationExists` when a file is there by now.
    func refuseTakenDestination(_ destination: String, running: [(files: CaptureFiles, journal: CaptureJournal)]) throws {
        if let other = running.first(where: { DestinationIdentity.same($0.journal.destination, destination) }) {
            throw ProVideoError(.busy, "cannot start a capture to \(destination): process \(other.journal.pid) is already "
                                + "recording to it (capture \(other.files.id)); give this take another name, or start it "
                                + "once that one has finished", path: destination)
        }
        if let waiting = try landingRecordings().first(where: { DestinationIdentity.same($0.destination, destination) }) {
            throw ProVideoError(.busy, "cannot start a capture to \(destination): the take \(waiting.path) is waiting to "
                                + "land there (`provideo land`); give this take another name, or start it once that one "
                                + "has landed", path: destination)
        }
        // Checked again here, under the lock: the check at resolve time came before it, and a
        // capture that finished (or a take that landed) since has put its file there. Its
        // rename comes before its journal goes, so one of the three checks sees it.
        if FileSystem.existsWithoutFollowing(destination) {
            throw ProVideoError(.destinationExists, "\(destination) already exists; it is never overwritten: choose "
                                + "another name", path: destination)
        }
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

/// An entry of `captures/` that may be a live capture and cannot be read: status, metrics and
/// check name it, admission counts its bandwidth as unknown, recovery leaves it.
package struct UndecidedCapture: Codable, Sendable, Equatable {
    /// Its name in `captures/`.
    package var id: String
    /// Why it cannot be decided on.
    package var reason: String
}

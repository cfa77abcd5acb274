import CommandLineSupport
import Foundation
import ProVideoStorage

/// `status -Hp` and `list -Hp`: the pool as `zpool list -Hp` shows one, a header (unless `-H`)
/// and rows (`TextTable`), with exact bytes, bit/s and seconds under `-p`.
struct ParsableViews {
    var options: ParsableOptions

    func size(_ bytes: Int64) -> String { options.exact ? "\(bytes)" : ByteFormat.significant(bytes) }
    func rate(_ bits: Int64) -> String { options.exact ? "\(bits)" : BitRateFormat.human(bits) }
    func duration(_ seconds: Double) -> String { options.exact ? String(format: "%.0f", seconds.rounded(.down)) : TimeFormat.clock(seconds) }

    /// One row: the pool's path, capacity, remaining capacity, bytes allocated on disk, busy
    /// reasons (comma-separated, `-` for none), running captures, the bitrate they declared, the
    /// admissible bitrate (`-` without a bandwidth), READONLY (`yes` on a read-only filesystem,
    /// else `no`), filesystem and engine; with a `rate`, the
    /// recording time left at it (`-` for a bitrate of 0).
    func status(_ status: PoolStatus, rate recordingRate: RecordingRate?) -> String {
        var columns = ["PATH", "CAPACITY", "REMAINING", "ALLOCATED", "BUSY", "CAPTURES", "DECLARED", "ADMISSIBLE",
                       "READONLY", "FILESYSTEM", "ENGINE"]
        var row: [String?] = [
            status.path, size(status.initialCapacity), size(status.remainingCapacity), size(status.reservedBytesOnDisk),
            status.busyReasons.isEmpty ? nil : status.busyReasons.names.joined(separator: ","), "\(status.captures.count)",
            rate(status.admittedBitrate), status.admissibleBitrate.map(rate), status.readOnly == true ? "yes" : "no",
            status.filesystem, status.engine,
        ]
        if let recordingRate {
            columns.append("TIMELEFT")
            row.append(RecordingTime.seconds(bytes: status.remainingCapacity, atBitrate: recordingRate.bitrate).map(duration))
        }
        var table = TextTable(columns: columns)
        table.add(row)
        return table.render(scripted: options.scripted)
    }

    /// One row per item the pool has: TYPE `capture` (NAME its id, SIZE written, DONE
    /// committed), `held` (a recording kept in the pool, NAME its path), `landing` (one waiting
    /// to land, DONE landed so far) or `recovered` (salvaged from a dead recorder, NAME where it
    /// went); DESTINATION where it goes.
    func list(_ listing: PoolListing) -> String {
        var table = TextTable(columns: ["TYPE", "NAME", "DESTINATION", "SIZE", "DONE"])
        for capture in listing.captures {
            table.add(["capture", capture.id, capture.destination, size(capture.bytesWritten), size(capture.committedBytes)])
        }
        let landing = Dictionary((listing.landing ?? []).map { ($0.path, $0) }) { first, _ in first }
        for held in listing.recordings {
            let progress = landing[held.path]
            table.add([progress == nil && held.landing != true ? "held" : "landing", held.path, held.destination,
                       size(held.length), progress.map { size($0.landedBytes) }])
        }
        for recovered in listing.recovered {
            table.add(["recovered", recovered.path, nil, size(recovered.length), nil])
        }
        return table.render(scripted: options.scripted)
    }
}

import Foundation
import ProVideoStorage

/// `provideo metrics`: the pool's state in the Prometheus text exposition format (version
/// 0.0.4), for node_exporter's textfile collector or any scraper. Every sample carries the
/// pool's path as a label, so one collector directory can hold several pools.
struct Metrics {
    var status: PoolStatus
    var listing: PoolListing
    /// Captures of dead recorders waiting for `provideo recover` (a scrape never salvages).
    var deadCaptures: Int

    /// The three busy reasons Apple defines; each is exported as 0 or 1.
    static let busyReasons = ["capturing", "replenishing", "adjustingCapacity"]
    /// The per-capture gauges read from its commit record and progress block: left out for a
    /// capture whose figures cannot be read (`PoolStatus.Capture.progressUnknown`).
    static let readFromProgress: Set = ["provideo_capture_written_bytes", "provideo_capture_committed_bytes"]

    var text: String { exposition.text }

    /// The same samples for a script (`metrics --json`): each sample's name, labels and value,
    /// the value spelled as in the text format (a string, as Prometheus' HTTP API gives it:
    /// "NaN" and "+Inf" are no JSON numbers).
    var json: MetricsText.Report { MetricsText.Report(pool: status.path, samples: exposition.samples) }

    private var exposition: MetricsText {
        var out = MetricsText(pool: status.path)
        out.gauge("provideo_capacity_bytes", "the capacity the administrator chose (initialCapacity)", status.initialCapacity)
        out.gauge("provideo_remaining_bytes", "bytes captures can still write (remainingCapacity; a floor while "
                  + "provideo_remaining_unknown_captures is above 0)", status.remainingCapacity)
        out.gauge("provideo_remaining_unknown_captures", "running captures whose progress cannot be read: each counts as "
                  + "having written all it was granted", Int64(status.remainingCapacityIsAtLeast?.count ?? 0))
        out.gauge("provideo_reserved_on_disk_bytes", "bytes the filesystem allocated for the reserve and running captures",
                  status.reservedBytesOnDisk)
        out.gauge("provideo_read_only", "1 when the pool's filesystem is read-only: it can be read, not changed",
                  status.readOnly == true ? 1 : 0)
        out.header("provideo_busy", "1 while the pool is busy for the reason", type: "gauge")
        for reason in Self.busyReasons {
            out.sample("provideo_busy", ["reason": reason], status.busyReasons.names.contains(reason) ? 1 : 0)
        }
        let captures = status.captures
        out.gauge("provideo_captures_running", "captures writing into the pool", Int64(captures.count))
        let perCapture: [(String, String, (PoolStatus.Capture) -> Double)] = [
            ("provideo_capture_written_bytes", "bytes of the capture that reached the disk", { Double($0.bytesWritten) }),
            ("provideo_capture_committed_bytes", "bytes of the capture a crash cannot lose", { Double($0.committedBytes) }),
            // Prometheus names take base units (bytes, not bits) with the unit last (its naming
            // guide; `promtool check metrics`): the declared bitrate is exported in bytes per second.
            ("provideo_capture_declared_rate_bytes_per_second", "the capture's declared bitrate (--bitrate), in bytes per second",
             { Double($0.bitrate) / 8 }),
            ("provideo_capture_recording_remaining_seconds", "recording time the remaining capacity holds at the capture's bitrate",
             { RecordingTime.seconds(bytes: status.remainingCapacity, atBitrate: $0.bitrate) ?? .nan }),
            ("provideo_capture_buffers_in_flight", "capture buffers handed to the disk and not yet landed",
             { Double($0.counters?.buffersInFlight ?? 0) }),
        ]
        for (name, help, value) in perCapture {
            out.header(name, help, type: "gauge")
            for capture in captures {
                // A figure that cannot be read is left out, not exported as a number it is not.
                if let unknown = capture.progressUnknown, Self.readFromProgress.contains(name) {
                    out.comment("\(name) of capture \(capture.id) omitted: \(unknown)")
                    continue
                }
                out.sample(name, Self.labels(capture), value(capture))
            }
        }
        let counters: [(String, String, (CaptureCounters) -> Int64)] = [
            ("provideo_capture_overruns_total", "appends that found every buffer in flight", \.overruns),
            ("provideo_capture_overrun_failures_total", "appends the overrun policy refused (dropped frames)", \.overrunFailures),
            ("provideo_capture_short_writes_retried_total", "short write completions written again", \.shortWritesRetried),
            ("provideo_capture_commits_total", "durability commits completed", \.commits),
        ]
        for (name, help, value) in counters {
            out.header(name, help, type: "counter")
            for capture in captures { out.sample(name, Self.labels(capture), Double(capture.counters.map(value) ?? 0)) }
        }
        let histograms: [(String, String, (CaptureCounters) -> LatencyBuckets)] = [
            ("provideo_capture_append_seconds", "time append held the recorder's thread", \.appendLatency),
            ("provideo_capture_write_completion_seconds", "time from a buffer's submission to its write's completion",
             \.completionLatency),
        ]
        for (name, help, buckets) in histograms {
            out.header(name, help, type: "histogram")
            for capture in captures {
                let latency = capture.counters.map(buckets) ?? LatencyBuckets.empty
                out.histogram(name, Self.labels(capture), latency)
            }
        }
        out.gauge("provideo_held_recordings", "recordings the pool holds because their destination could not take them",
                  Int64(listing.recordings.count))
        // The landing backlog (Docs/LANDING.md), for the fleet's alerts (Tools/prometheus): how
        // much waits, and how far its transfers got (a figure that stops moving while takes
        // wait is a stalled landing).
        let landing = status.landing ?? []
        out.gauge("provideo_landing_waiting_recordings", "takes kept in the pool to land at their destination",
                  Int64(landing.count))
        out.gauge("provideo_landing_waiting_bytes", "bytes of the takes waiting to land", status.landingBytes ?? 0)
        out.gauge("provideo_landing_waiting_for_fleet_slot", "1 while a lander waits for a slot of its fleet's landing "
                  + "budget (land --fleet)", status.landingWaitsForFleetSlot == true ? 1 : 0)
        // Summed as samples are, in doubles: lengths read from notes cannot overflow it.
        out.header("provideo_landing_landed_bytes", "bytes of the waiting takes already copied and flushed at their "
                   + "destination", type: "gauge")
        out.sample("provideo_landing_landed_bytes", [:], landing.reduce(0) { $0 + Double($1.landedBytes) })
        out.gauge("provideo_landing_failed_attempts", "failed landing attempts since each waiting take's last success, together",
                  Int64(landing.map(\.attempts).reduce(0, +)))
        out.gauge("provideo_dead_captures", "captures of recorders that died, waiting for `provideo recover`",
                  Int64(deadCaptures))
        out.header("provideo_salvaged_recordings_total", "captures of dead recorders salvaged since the pool was created",
                   type: "counter")
        // An unreadable salvage log leaves the counter out (a scrape then sees it absent), never 0.
        if let unreadable = listing.recoveredUnreadable {
            out.comment("provideo_salvaged_recordings_total is unknown: \(unreadable)")
        } else {
            out.sample("provideo_salvaged_recordings_total", [:], Double(listing.recovered.count))
        }
        return out
    }

    static func labels(_ capture: PoolStatus.Capture) -> [String: String] {
        ["destination": capture.destination, "pid": "\(capture.pid)"]
    }
}

/// Writes samples in the text exposition format: `# HELP`, `# TYPE`, then `name{labels} value`.
struct MetricsText {
    /// One sample: its name, its labels (the pool's included) and its value as the text
    /// format spells it.
    struct Sample: Encodable {
        var name: String
        var labels: [String: String]
        var value: String
    }

    /// What `metrics --json` prints.
    struct Report: Encodable {
        var pool: String
        var samples: [Sample]
    }

    var pool: String
    private(set) var text = ""
    private(set) var samples: [Sample] = []

    init(pool: String) { self.pool = pool }

    mutating func header(_ name: String, _ help: String, type: String) {
        text += "# HELP \(name) \(help.replacingOccurrences(of: "\\", with: "\\\\"))\n# TYPE \(name) \(type)\n"
    }

    /// A comment line (the format ignores `#` lines other than HELP and TYPE): why a sample is
    /// missing. One line: a newline in `note` (a path) is written as `\n`.
    mutating func comment(_ note: String) {
        text += "# \(note.replacingOccurrences(of: "\n", with: "\\n"))\n"
    }

    mutating func gauge(_ name: String, _ help: String, _ value: Int64) {
        header(name, help, type: "gauge")
        sample(name, [:], Double(value))
    }

    mutating func sample(_ name: String, _ labels: [String: String], _ value: Double) {
        let all = labels.merging(["pool": pool]) { own, _ in own }
        let rendered = all.sorted { $0.key < $1.key }.map { "\($0.key)=\"\(Self.escape($0.value))\"" }
        text += "\(name){\(rendered.joined(separator: ","))} \(Self.number(value))\n"
        samples.append(Sample(name: name, labels: all, value: Self.number(value)))
    }

    /// A histogram's `_bucket` samples (cumulative, `le` in seconds, then `+Inf`), `_sum`
    /// (seconds) and `_count`.
    mutating func histogram(_ name: String, _ labels: [String: String], _ latency: LatencyBuckets) {
        for (bound, count) in zip(LatencyBuckets.boundsNanoseconds, latency.cumulativeCounts) {
            sample(name + "_bucket", labels.merging(["le": Self.number(Double(bound) / 1e9)]) { own, _ in own }, Double(count))
        }
        sample(name + "_bucket", labels.merging(["le": "+Inf"]) { own, _ in own }, Double(latency.count))
        sample(name + "_sum", labels, Double(latency.sumNanoseconds) / 1e9)
        sample(name + "_count", labels, Double(latency.count))
    }

    /// Label values escape backslash, double quote and newline (the format's three escapes).
    static func escape(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }

    /// Whole numbers without an exponent (byte counts stay exact up to 2^53), NaN as "NaN",
    /// infinities as "+Inf" and "-Inf" (the format's spellings).
    static func number(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded() && abs(value) < 9e15, let whole = Int64(checked: value) { return String(whole) }
        return "\(value)"
    }
}

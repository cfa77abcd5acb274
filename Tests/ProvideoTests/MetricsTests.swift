import Foundation
import TestSupport
import Testing
import ProVideoStorage

/// `provideo metrics`, parsed by the Prometheus project's own Python parser
/// (`prometheus_client.parser`), matches `status --json`, with a capture running.
@Suite struct MetricsTests {
    /// Parses the text format and prints every sample as JSON: [[name, labels, value]].
    static let parser = """
        import json, sys
        from prometheus_client.parser import text_string_to_metric_families
        samples = []
        for family in text_string_to_metric_families(sys.stdin.read()):
            for s in family.samples:
                samples.append([s.name, s.labels, s.value, family.type])
        print(json.dumps(samples))
        """

    static var hasParser: Bool {
        (try? TestSupport.run("/usr/bin/python3", ["-c", "import prometheus_client"]).status) == 0
    }

    static let promtool = "/usr/bin/promtool"
    static var hasPromtool: Bool { FileManager.default.isExecutableFile(atPath: promtool) }

    /// `promtool check metrics`: the Prometheus project's linter (base units, unit suffix last,
    /// `_total` on counters, HELP on every family) prints each problem and exits 1.
    func expectPromtoolAccepts(_ text: String) throws {
        let result = try TestSupport.run(Self.promtool, ["check", "metrics"], stdin: Data(text.utf8))
        #expect(result.status == 0 && result.stdout.isEmpty && result.stderr.isEmpty,
                "promtool check metrics refused the output: \(result.stdout)\(result.stderr)")
    }

    /// With a capture running (every family has samples) and on an idle pool, the output
    /// passes `promtool check metrics`.
    @Test(.enabled(if: hasPromtool, "promtool is not installed (apt-get install prometheus)"))
    func promtoolAcceptsTheMetrics() throws {
        try FS.withScratchPool(capacity: "16M") { dir, pool in
            let idle = try FS.provideo(pool, "metrics")
            #expect(idle.status == 0, "\(idle.stderr)")
            try expectPromtoolAccepts(idle.stdout)
            let (recorder, input) = try FS.startRecorder(pool, dir + "/take.mov", ["--bitrate", "80M"])
            defer { if recorder.isRunning { recorder.terminate() }; recorder.waitUntilExit() }
            try input.write(contentsOf: Data(TestSupport.pattern(1_000_000, seed: 3)))
            for _ in 0..<100 where (try TestSupport.poolStatus(pool)).captures.isEmpty { usleep(50_000) }
            let busy = try FS.provideo(pool, "metrics")
            #expect(busy.stdout.contains("provideo_capture_declared_rate_bytes_per_second{"), "\(busy.stdout)")
            try expectPromtoolAccepts(busy.stdout)
            try input.close()
        }
    }

    struct Sample {
        var name: String
        var labels: [String: String]
        var value: Double
        var type: String
    }

    func parse(_ text: String) throws -> [Sample] {
        let result = try TestSupport.run("/usr/bin/python3", ["-c", Self.parser], stdin: Data(text.utf8))
        try #require(result.status == 0, "the Prometheus parser refused the output: \(result.stderr)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[Any]])
        return rows.map { Sample(name: $0[0] as! String, labels: $0[1] as! [String: String],
                                 value: ($0[2] as! NSNumber).doubleValue, type: $0[3] as! String) }
    }

    @Test(.enabled(if: hasParser, "python3-prometheus-client is not installed (apt-get install python3-prometheus-client)"))
    func metricsMatchStatusWithACaptureRunning() throws {
        try FS.withScratchPool(capacity: "32M") { dir, pool in
            // A destination whose name needs escaping in a label value.
            let destination = dir + "/take \"one\".mov"
            let (recorder, input) = try FS.startRecorder(pool, destination, ["--bitrate", "80M"])
            defer { if recorder.isRunning { recorder.terminate() }; recorder.waitUntilExit() }
            try input.write(contentsOf: Data(TestSupport.pattern(6_000_000, seed: 21)))
            // The input is quiet from here: once a commit made it durable, the counters stay still.
            var status = try TestSupport.poolStatus(pool)
            // (and the capture has published the commit's counters).
            for _ in 0..<100 where status.captures.first.map({ $0.committedBytes < 6_000_000 || $0.counters?.commits ?? 0 == 0 })
                ?? true {
                usleep(100_000)
                status = try TestSupport.poolStatus(pool)
            }
            let capture = try #require(status.captures.first)
            #expect(capture.committedBytes == 6_000_000)

            let metrics = try TestSupport.run("provideo", ["--pool", pool, "metrics"])
            #expect(metrics.status == 0, "\(metrics.stderr)")
            let samples = try parse(metrics.stdout)
            func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
                samples.first { $0.name == name && $0.labels == labels.merging(["pool": pool]) { a, _ in a } }?.value
            }
            let after = try TestSupport.poolStatus(pool)
            #expect(value("provideo_capacity_bytes") == Double(after.initialCapacity))
            #expect(value("provideo_remaining_bytes") == Double(after.remainingCapacity))
            #expect(value("provideo_reserved_on_disk_bytes") == Double(after.reservedBytesOnDisk))
            #expect(value("provideo_busy", ["reason": "capturing"]) == 1)
            #expect(value("provideo_busy", ["reason": "replenishing"]) == 0)
            #expect(value("provideo_captures_running") == 1)
            let labels = ["destination": destination, "pid": "\(capture.pid)"]
            #expect(value("provideo_capture_written_bytes", labels) == Double(after.captures.first?.bytesWritten ?? -1))
            #expect(value("provideo_capture_committed_bytes", labels) == 6_000_000)
            #expect(value("provideo_capture_declared_rate_bytes_per_second", labels) == 10_000_000)
            let seconds = try #require(value("provideo_capture_recording_remaining_seconds", labels))
            #expect(abs(seconds - Double(after.remainingCapacity) * 8 / 80e6) < 1e-6)
            // The capture's own counters, published in its progress block, as status shows them.
            let counters = try #require(after.captures.first?.counters)
            #expect(counters.commits >= 1 && counters.appendLatency.count > 0)
            #expect(value("provideo_capture_overruns_total", labels) == Double(counters.overruns))
            #expect(value("provideo_capture_short_writes_retried_total", labels) == Double(counters.shortWritesRetried))
            #expect(value("provideo_capture_commits_total", labels) == Double(counters.commits))
            #expect(value("provideo_capture_buffers_in_flight", labels) == Double(counters.buffersInFlight))
            #expect(value("provideo_capture_append_seconds_count", labels) == Double(counters.appendLatency.count))
            #expect(value("provideo_capture_append_seconds_bucket", labels.merging(["le": "+Inf"]) { a, _ in a })
                    == Double(counters.appendLatency.count))
            #expect(value("provideo_capture_append_seconds_bucket", labels.merging(["le": "0.0001"]) { a, _ in a })
                    == Double(counters.appendLatency.cumulativeCounts[0]))
            #expect(samples.first { $0.name == "provideo_capture_write_completion_seconds_bucket" }?.type == "histogram")
            #expect(samples.first { $0.name == "provideo_salvaged_recordings_total" }?.type == "counter")
            #expect(value("provideo_salvaged_recordings_total") == 0)
            if Self.hasPromtool { try expectPromtoolAccepts(metrics.stdout) }
            try input.close()
        }
    }

    /// `metrics --json` holds the same samples as the text, as the Prometheus parser reads it:
    /// every name, label set and value, in order, the values spelled as in the text format; and
    /// it refuses `--output` beside it (a usage error).
    @Test(.enabled(if: hasParser, "python3-prometheus-client is not installed (apt-get install python3-prometheus-client)"))
    func jsonHoldsTheTextsSamples() throws {
        try FS.withScratchPool(capacity: "8M") { dir, pool in
            let text = try FS.provideo(pool, "metrics")
            let json = try FS.provideo(pool, "metrics", "--json")
            #expect(text.status == 0 && json.status == 0, "\(text.stderr)\(json.stderr)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
            #expect(object["pool"] as? String == pool)
            let samples = try #require(object["samples"] as? [[String: Any]])
            let parsed = try parse(text.stdout)
            #expect(samples.count == parsed.count && samples.count >= 10, "\(samples.count) against \(parsed.count)")
            for (sample, expected) in zip(samples, parsed) {
                let value = Double(sample["value"] as? String ?? "")
                #expect(sample["name"] as? String == expected.name && sample["labels"] as? [String: String] == expected.labels
                        && value == expected.value, "\(sample) against \(expected)")
            }
            #expect(samples.contains { $0["name"] as? String == "provideo_capacity_bytes" && $0["value"] as? String == "8388608" })
            let both = try FS.provideo(pool, "metrics", "--json", "--output", dir + "/provideo.prom")
            #expect(both.status == 2 && !FileManager.default.fileExists(atPath: dir + "/provideo.prom"), "\(both.stderr)")
        }
    }

    static let prometheusTools = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Tools/prometheus").path

    /// The fleet's alerting rules (Tools/prometheus) pass `promtool check rules`, their unit
    /// tests (`promtool test rules`: each alert fires when it should and not before) and the
    /// scrape configuration `promtool check config`; and every metric a rule names is one
    /// `provideo metrics` exports (a renamed metric would leave its alert silent forever).
    @Test(.enabled(if: hasPromtool, "promtool is not installed (apt-get install prometheus)"))
    func alertRulesPassTheirTests() throws {
        let directory = Self.prometheusTools
        for arguments in [["check", "rules", "provideo-alerts.yml"], ["test", "rules", "provideo-alerts.test.yml"],
                          ["check", "config", "prometheus.yml"]] {
            let result = try TestSupport.run("/bin/sh", ["-c", "cd '\(directory)' && \(Self.promtool) " + arguments.joined(separator: " ")])
            #expect(result.status == 0 && result.stdout.contains("SUCCESS"), "promtool \(arguments): \(result.stdout)\(result.stderr)")
        }
        let rules = try String(contentsOfFile: directory + "/provideo-alerts.yml", encoding: .utf8)
        let named = Set(rules.matches(of: #/provideo_[a-z_]+/#).map { String($0.output) })
        try FS.withScratchPool(capacity: "8M") { _, pool in
            let text = try FS.provideo(pool, "metrics").stdout
            let exported = Set(text.matches(of: #/# TYPE (provideo_[a-z_]+) /#).map { String($0.output.1) })
            #expect(named.count >= 7 && named.isSubset(of: exported), "named by a rule, not exported: \(named.subtracting(exported).sorted())")
        }
    }

    /// `--output` writes the file whole (a textfile collector reads it at any moment) and
    /// leaves no temporary file.
    @Test func outputFileIsWrittenWhole() throws {
        try FS.withScratchPool(capacity: "8M") { dir, pool in
            let result = try FS.provideo(pool, "metrics", "--output", dir + "/provideo.prom")
            #expect(result.status == 0 && result.stdout.isEmpty, "\(result.stderr)")
            let text = try String(contentsOfFile: dir + "/provideo.prom", encoding: .utf8)
            #expect(text == (try FS.provideo(pool, "metrics").stdout))
            #expect(text.contains("\nprovideo_capacity_bytes{pool=\"\(pool)\"} 8388608\n"))
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == ["pool", "provideo.prom"])
            let mode = try FileManager.default.attributesOfItem(atPath: dir + "/provideo.prom")[.posixPermissions] as? Int
            #expect(mode == 0o644)
            let refused = try FS.provideo(pool, "metrics", "--output", dir + "/missing/provideo.prom")
            #expect(refused.status == 1 && refused.stderr.hasPrefix("provideo: cannot write the metrics to \(dir)/missing/provideo.prom: ")
                    && refused.stderr.contains("No such file or directory"), "\(refused.stderr)")
        }
    }

    /// Two writers publishing one file at once (two processes, each running `metrics --output`
    /// in a loop) both succeed every time, and a reader polling the file meanwhile never reads it
    /// empty or cut short; no temporary file is left behind.
    @Test func concurrentWritersNeverPublishAPartialFile() throws {
        try FS.withScratchPool(capacity: "8M") { dir, pool in
            let output = dir + "/provideo.prom"
            let expected = try FS.provideo(pool, "metrics").stdout
            try #require(expected.hasSuffix("provideo_salvaged_recordings_total{pool=\"\(pool)\"} 0\n"))
            let loop = "for i in $(seq 150); do \"$0\" --pool \"$1\" metrics --output \"$2\" || exit 1; done"
            let writers = try (0..<2).map { _ in
                try TestSupport.start("/bin/sh", ["-c", loop, TestSupport.productsDirectory + "/provideo", pool, output])
            }
            defer { for writer in writers { if writer.isRunning { writer.terminate() }; writer.waitUntilExit() } }
            var reads = 0
            var wrong: [String] = []
            while writers.contains(where: \.isRunning) {
                // Missing only until the first writer has published.
                guard let text = try? String(contentsOfFile: output, encoding: .utf8) else { continue }
                reads += 1
                if text != expected { wrong.append(text) }
            }
            for writer in writers {
                writer.waitUntilExit()
                let errors = String(decoding: (writer.standardError as! Pipe).fileHandleForReading.readDataToEndOfFile(),
                                    as: UTF8.self)
                #expect(writer.terminationStatus == 0, "a writer failed: \(errors)")
            }
            #expect(reads > 100)
            #expect(wrong.isEmpty, "\(wrong.count) of \(reads) reads were not the whole file, e.g. \(wrong.first?.count ?? 0) bytes")
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == ["pool", "provideo.prom"])
        }
    }
}

@testable import BenchKit
import Foundation
import ProVideoStorage
import TestSupport
import Testing

/// Docs/BENCHMARKS.md documents what calibrate runs, names nothing outside the repository;
/// calibrate's warnings and the bench's choice of scratch pools say what to do.
@Suite struct BenchDocsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    static func benchmarks() throws -> String {
        try String(contentsOfFile: root + "/Docs/BENCHMARKS.md", encoding: .utf8)
    }

    /// The fio command line in the docs is `fioArguments` for the defaults, word for word.
    @Test func documentedFioCommandIsTheOneRun() throws {
        let text = try Self.benchmarks()
        let start = try #require(text.range(of: "`fio --name=provideo-calibrate"))
        let end = try #require(text[start.upperBound...].range(of: "`"))
        let documented = text[text.index(after: start.lowerBound)..<end.lowerBound].split(whereSeparator: \.isWhitespace).map(String.init)
        let run = FioRun(file: "<pool>/captures/<id>/data", bytes: 8 << 30, blockSize: 4 << 20, queueDepth: 16,
                         fixedBuffers: true, hugePages: false)
        let arguments = ["fio"] + run.arguments.map { $0 == "--size=\(8 << 30)" ? "--size=<bytes>" : $0 }
        #expect(documented == arguments)
    }

    @Test func namesNoMachinePathAndNoIssue() throws {
        let text = try Self.benchmarks()
        for path in ["/work", "/var/", "/tmp", "/home", "/root", "/srv", "/media", "/mnt"] {
            #expect(!text.contains(path), "Docs/BENCHMARKS.md names \(path)")
        }
        let words = text.lowercased().split { !$0.isLetter }
        #expect(!words.contains("issue") && !words.contains("issues"), "Docs/BENCHMARKS.md speaks of an issue")
    }

    static func pass(_ raw: Double, _ durable: Double) -> Calibration.Pass {
        Calibration.Pass(bandwidth: raw, durableBandwidth: durable, durableCommits: 5, fioBandwidth: nil, efficiency: nil,
                         fioFirst: false)
    }

    @Test func spreadOverAQuarterWarns() throws {
        let steady = [Self.pass(1000e6, 800e6), Self.pass(1100e6, 820e6), Self.pass(1050e6, 790e6)]
        #expect(Calibration.spreadWarning(steady) == nil)
        let noisy = [Self.pass(1000e6, 800e6), Self.pass(1500e6, 810e6), Self.pass(1050e6, 790e6)]
        let warning = try #require(Calibration.spreadWarning(noisy))
        #expect(warning == "the passes spread more than 25%: raw 1000.0 MB/s … 1500.0 MB/s (48% of the median). "
                + "The disk was not steady (other I/O?): rerun with more --repeat and read the medians as rough")
    }

    /// Paired ratios average geometrically (2× and 0.5× are 1×), and each order's mean shows
    /// what running second is worth.
    @Test func pairedRatiosAverageGeometrically() throws {
        let summary = try #require(Calibration.RatioSummary([(2.0, false), (0.5, true), (2.0, false), (0.5, true)]))
        #expect(abs(summary.geometricMean - 1) < 1e-12)
        #expect(summary.low == 0.5 && summary.high == 2 && abs(summary.spread - 1.5) < 1e-12)
        #expect(abs(summary.oursFirst! - 2) < 1e-12 && abs(summary.fioFirst! - 0.5) < 1e-12)
        #expect(Calibration.RatioSummary([(1.0, false), (0, true)]) == nil, "a ratio of 0 is no measurement")
        #expect(Calibration.RatioSummary([(1.2, false)])?.fioFirst == nil)
    }

    /// The default pool is passed over, with the reason, when missing or too small for the run.
    @Test func unfitDefaultPoolIsPassedOverWithTheReason() throws {
        try TestSupport.withScratch("bench-unfit") { dir in
            #expect(try BenchWorkspace.defaultPoolUnfit(dir + "/none", minimumBytes: 1) == "no pool at \(dir)/none")
            let pool = try Pool.create(at: dir + "/pool", capacity: 8 << 20)
            defer { try? pool.destroy() }
            #expect(try BenchWorkspace.defaultPoolUnfit(pool.path, minimumBytes: 8 << 20) == nil)
            #expect(try BenchWorkspace.defaultPoolUnfit(pool.path, minimumBytes: 9 << 20)
                    == "the pool at \(pool.path) has 8.0 MiB of reserve left, this run needs 9.0 MiB (9437184 bytes)")
        }
    }
}

/// The pool-size pre-check counts what captures hold ahead, and a run too short to reach the
/// disk says so (issue 28: `--streams 16 --duration 2.5` passed the check and failed at the
/// 16th start).
@Suite struct BenchPreCheckTests {
    /// A stream takes its frames, three grant steps and 16 MiB; the step is the capture's
    /// default for the bitrate and the pool's capacity.
    @Test func eachStreamNeedsItsFramesAndThreeGrants() {
        // 880 Mbit/s: two seconds (220 MB) a step in a large pool, a sixteenth of a small one.
        #expect(RunPlan.poolBytes(perStream: 1_000_000, bitrate: 880_000_000, capacity: 1 << 40)
                == 1_000_000 + 3 * 220_000_000 + (16 << 20))
        #expect(RunPlan.poolBytes(perStream: 1_000_000, bitrate: 880_000_000, capacity: 64 << 20)
                == 1_000_000 + 3 * (4 << 20) + (16 << 20))
    }

    @Test func aRunWithinTheBuffersWarns() {
        let short = RunPlan(streams: 1, bitrate: 880_000_000, fps: 25, sizes: .constant(bitrate: 880_000_000, fps: 25, count: 50),
                            scratchDirectory: "")
        let warning = short.shortRunWarning ?? ""
        #expect(warning.contains("nothing waits on the disk") && warning.contains("Run longer than 3.0 s"), "\(warning)")
        let long = RunPlan(streams: 1, bitrate: 880_000_000, fps: 25, sizes: .constant(bitrate: 880_000_000, fps: 25, count: 250),
                           scratchDirectory: "")
        #expect(long.shortRunWarning == nil)
    }

    /// 4 streams of 25 MB in a 256 MiB pool: their frames and 16 MiB each fit (the old check),
    /// their grants do not. The bench refuses before any capture starts and says to what size
    /// to grow the pool.
    @Test func grantsAreCountedBeforeAnyStart() throws {
        try TestSupport.withScratch { directory in
            let pool = try Pool.create(at: directory + "/pool", capacity: 256 << 20)
            defer { try? pool.destroy() }
            let result = try TestSupport.run("provideo-bench", [
                "--pool", pool.path, "--streams", "4", "--bitrate", "400M", "--fps", "25", "--duration", "0.5", "--mode", "pool"])
            #expect(result.status == 1)
            #expect(result.stderr.contains("the grants each capture holds ahead"), "\(result.stderr)")
            #expect(result.stderr.range(of: #"resize [0-9]+M"#, options: .regularExpression) != nil, "\(result.stderr)")
            #expect(result.stderr.contains("nothing waits on the disk"), "0.5 s is within the buffers: \(result.stderr)")
            #expect(try pool.remainingCapacity == 256 << 20)
        }
    }
}

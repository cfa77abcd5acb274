import Foundation
import Glibc
import TestSupport
import Testing

/// provideosink as splitmuxsink's sink (issue 29): 600 frames split into 10 takes of 2 s, each
/// take a new sink, ended by EOS; measured against filesink in the same pipeline.
extension GStreamerSinkTests {
    /// How one run of the split pipeline ended.
    enum SplitRun: Equatable {
        /// It exited with this status.
        case exited(Int32)
        /// It was still running 3 s after its last take was at its destination: it hung at the
        /// end, waiting for an EOS that GStreamer never posted to the application.
        case hungAfterLastTake
        /// Its last take never appeared within a minute.
        case stuck
    }

    /// The split pipeline: JPEG frames (every frame a keyframe, so every take starts on one)
    /// through qtmux into `sink`; splitmuxsink honours sink-factory only with async-finalize
    /// (without it, it records with filesink whatever the factory says).
    static func splitPipeline(sink: String, pool: String, directory: String) -> String {
        let properties = sink == "provideosink" ? " sink-properties=properties,pool=\(pool)" : ""
        return "videotestsrc num-buffers=600 ! video/x-raw,width=320,height=240,framerate=30/1 ! jpegenc "
            + "! splitmuxsink async-finalize=true muxer-factory=qtmux sink-factory=\(sink)\(properties) "
            + "max-size-time=2000000000 location=\(directory)/take%02d.mov"
    }

    /// Runs `tool` on the split pipeline into `directory` until it exits, hangs after its last
    /// take or gets stuck (the last two are killed, after `whileHung` ran); its output.
    static func runSplit(_ tool: String, _ arguments: [String], directory: String, environment: [String: String],
                         whileHung: () throws -> Void = {}) throws -> (run: SplitRun, stdout: String, stderr: String) {
        let process = try TestSupport.start(tool, arguments, environment: environment)
        let started = Date()
        var lastTakeSeen: Date?
        var run: SplitRun?
        while run == nil {
            usleep(20_000)
            if !process.isRunning { run = .exited(process.terminationStatus); break }
            if lastTakeSeen == nil && FileManager.default.fileExists(atPath: directory + "/take09.mov") { lastTakeSeen = Date() }
            if let seen = lastTakeSeen, Date().timeIntervalSince(seen) > 3 {
                try whileHung()
                run = .hungAfterLastTake
            } else if lastTakeSeen == nil && Date().timeIntervalSince(started) > 60 {
                run = .stuck
            }
        }
        // A hung gst-launch-1.0 waits for SIGINT; nothing is left to save.
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        let stdout = (process.standardOutput as! Pipe).fileHandleForReading.readDataToEndOfFile()
        let stderr = (process.standardError as! Pipe).fileHandleForReading.readDataToEndOfFile()
        return (run!, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self))
    }

    /// The takes in `directory`, each checked to hold its 60 frames when `decode`.
    static func takes(in directory: String, decode: Bool) throws -> [String] {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasPrefix("take") }.sorted()
        if decode {
            for name in names { #expect(try Probe.frames(directory + "/" + name) == 60, "\(name)") }
        }
        return names
    }

    /// Started straight to PLAYING, as an application starts it (gst-run), the split pipeline
    /// ends at EOS every time with either sink: 20 runs each, provideosink hangs no more often
    /// than filesink (neither hung in any of our runs), each of its runs leaves 10 takes of 60
    /// frames that went through the pool, and its peak RSS stays under 200 MiB (the sink's
    /// buffers at 32 MiB; at the library's default 880 Mbit/s, 330 MB a capture, it was 684 MB).
    @Test func splitTakesEndAtEOSLikeFilesink() throws {
        try TestSupport.withScratch { scratch in
            let plugin = try Plugin(scratch: scratch)
            let pool = scratch + "/pool"
            try FS.createPool(pool, capacity: "64M", options: ["--bandwidth", "10G"])
            var hangs = ["filesink": 0, "provideosink": 0]
            var peakRSS = 0
            for index in 0..<20 {
                for sink in ["filesink", "provideosink"] {
                    let directory = scratch + "/\(sink)-\(index)"
                    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                    let pipeline = Self.splitPipeline(sink: sink, pool: pool, directory: directory)
                    let (run, stdout, stderr) = try Self.runSplit(plugin.runner, [pipeline], directory: directory,
                                                                  environment: plugin.environment)
                    if run != .exited(0) { hangs[sink]! += 1 }
                    guard sink == "provideosink" else { continue }
                    #expect(run == .exited(0), "\(stderr)")
                    let rss = stdout.split(separator: "\n").compactMap { line -> Int? in
                        line.hasPrefix("peak-rss-kib ") ? Int(line.dropFirst("peak-rss-kib ".count)) : nil
                    }
                    peakRSS = max(peakRSS, rss.first ?? .max)
                    #expect(try Self.takes(in: directory, decode: index == 0 || index == 19).count == 10)
                    // The takes went through the pool: their bytes left its reserve.
                    let status = try TestSupport.poolStatus(pool)
                    #expect(status.captures.isEmpty)
                    #expect(status.remainingCapacity < status.initialCapacity, "\(status.remainingCapacity)")
                    #expect(try TestSupport.run("provideo", ["--pool", pool, "replenish"]).status == 0)
                }
            }
            #expect(hangs["provideosink"]! <= hangs["filesink"]!, "\(hangs)")
            #expect(hangs["provideosink"] == 0, "\(hangs)")
            #expect(peakRSS < 200 << 10, "peak RSS \(peakRSS) KiB")
        }
    }

    /// Through gst-launch-1.0 the same pipeline sometimes never ends: gst-launch-1.0 sets
    /// PLAYING when it sees the pipeline PAUSED, splitmuxsink posts that PAUSED from its
    /// streaming thread, and GStreamer 1.22's bin can end up believing it is not PLAYING, so
    /// it swallows the EOS (gst-run.c; filesink hangs the same way, in 13 % of 150 runs on the
    /// test machine). 20 runs: whether a run ends or hangs, the sink has done its part by then:
    /// 10 takes of 60 frames at their destination, no capture left running in the pool.
    @Test func splitTakesThroughGstLaunchAreCompleteEvenWhenItHangs() throws {
        try TestSupport.withScratch { scratch in
            let plugin = try Plugin(scratch: scratch)
            let pool = scratch + "/pool"
            try FS.createPool(pool, capacity: "64M", options: ["--bandwidth", "10G"])
            for index in 0..<20 {
                let directory = scratch + "/run-\(index)"
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                let pipeline = Self.splitPipeline(sink: "provideosink", pool: pool, directory: directory)
                var runningWhileHung: Int?
                let (run, _, stderr) = try Self.runSplit("/usr/bin/gst-launch-1.0", ["-q"] + pipeline.split(separator: " ").map(String.init),
                                                         directory: directory, environment: plugin.environment) {
                    runningWhileHung = try TestSupport.poolStatus(pool).captures.count
                }
                #expect(run == .exited(0) || run == .hungAfterLastTake, "\(run): \(stderr)")
                #expect(runningWhileHung ?? 0 == 0)
                #expect(try Self.takes(in: directory, decode: run == .hungAfterLastTake || index == 0).count == 10)
                #expect(try TestSupport.run("provideo", ["--pool", pool, "replenish"]).status == 0)
            }
        }
    }
}

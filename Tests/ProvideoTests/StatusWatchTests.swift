import Foundation
import Glibc
import TestSupport
import Testing

/// `status --watch`: a view every interval, each capture with its rate and time left, and a
/// clean exit on Ctrl-C.
@Suite struct StatusWatchTests {
    @Test func watchShowsViewsUntilInterrupted() throws {
        try FS.withScratchPool(capacity: "32M") { dir, pool in
            let (recorder, input) = try FS.startRecorder(pool, dir + "/take.mov", ["--bitrate", "80M"])
            defer { try? input.close(); recorder.waitUntilExit() }
            try input.write(contentsOf: Data(TestSupport.pattern(2_000_000, seed: 8)))
            for _ in 0..<100 where (try TestSupport.poolStatus(pool)).captures.isEmpty { usleep(50_000) }

            let watch = try TestSupport.start("provideo", ["--pool", pool, "status", "--watch", "0.2"])
            defer { if watch.isRunning { watch.terminate() } }
            usleep(1_000_000)
            kill(watch.processIdentifier, SIGINT)
            let output = String(decoding: (watch.standardOutput as! Pipe).fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            watch.waitUntilExit()
            #expect(watch.terminationReason == .exit && watch.terminationStatus == 0, "status \(watch.terminationStatus)")
            let views = output.components(separatedBy: "every 0.2 s, Ctrl-C to stop\n").dropFirst()
            #expect(views.count >= 3, "\(views.count) views in 1 s: \(output)")
            let second = try #require(views.dropFirst().first)
            #expect(second.contains("capture     → \(dir)/take.mov: "), "\(second)")
            #expect(second.contains(", 80 Mbit/s, ") && second.contains(" MB/s"), "\(second)")
        }
    }

    @Test(arguments: ["0", "-1", "x"])
    func badIntervalsAreRefused(_ interval: String) throws {
        let result = try TestSupport.run("provideo", ["--pool", "/nonexistent", "status", "--watch=\(interval)"])
        #expect(result.status == 2 && result.stderr.hasPrefix("provideo: --watch takes seconds between views"), "\(result.stderr)")
    }
}

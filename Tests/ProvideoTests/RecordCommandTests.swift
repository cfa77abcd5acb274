import Foundation
import Glibc
import TestSupport
import Testing
@testable import ProVideoStorage

/// `provideo record` as a recorder uses it: a separate process fed through a pipe.
@Suite struct RecordCommandTests {
    /// SIGTERM (and SIGINT) finish the capture cleanly with everything received so far.
    /// No input (a failed upstream) is a failure, and leaves no empty file behind.
    @Test func emptyInputRecordsNothing() throws {
        try TestSupport.withScratch { scratch in
            let pool = scratch + "/pool"
            try TestSupport.run("provideo", ["--pool", pool, "create", "--capacity", "16M"])
            let result = try TestSupport.run("provideo", ["--pool", pool, "record", scratch + "/take.mov"], stdin: Data())
            #expect(result.status == 1)
            #expect(result.stderr.contains("no input arrived"))
            #expect(!FileManager.default.fileExists(atPath: scratch + "/take.mov"))
            let status = try TestSupport.run("provideo", ["--pool", pool, "status", "--json"])
            #expect(status.stdout.contains("\"remainingCapacity\" : 16777216"))
        }
    }

    /// Input that arrives at once (a file) gets no rate (it was 157532.5 Mbit/s over 0.0 s);
    /// the summary says the disk kept up, and that the take's space came out of the reserve with
    /// how to refill it; `--replenish` refills it.
    @Test func summarySaysWhatHappened() throws {
        try FS.withScratchPool(capacity: "16M") { dir, pool in
            let input = Data(TestSupport.pattern(3_000_000, seed: 12))
            let result = try FS.provideo(pool, "record", dir + "/a.mov", stdin: input)
            #expect(result.status == 0, "\(result.stderr)")
            let lines = result.stdout.split(separator: "\n").map(String.init)
            try #require(lines.count == 2, "\(result.stdout)")
            #expect(lines[0].hasPrefix("recorded 2.9 MiB (3000000 bytes) to \(dir)/a.mov; the input came all at once (in 0."),
                    "\(lines[0])")
            #expect(lines[0].contains(" s, as from a file: no stream rate to show); the disk kept up; engine "), "\(lines[0])")
            #expect(!lines[0].contains("Mbit/s"), "\(lines[0])")
            let remaining = try TestSupport.poolStatus(pool).remainingCapacity
            #expect(remaining < 16 << 20 - 3_000_000)
            #expect(lines[1] == "the take's space came out of the pool's reserve: \(ByteFormat.significant(remaining)) of 16.0 MiB "
                    + "remain; `provideo replenish` (or `record --replenish`) refills it from the filesystem's free space")

            let replenished = try FS.provideo(pool, "record", dir + "/b.mov", "--replenish", "--json", stdin: input)
            let report = try #require(try JSONSerialization.jsonObject(with: Data(replenished.stdout.utf8)) as? [String: Any],
                                      "\(replenished.stdout) \(replenished.stderr)")
            #expect(report["remainingCapacity"] as? Int64 == 16 << 20)
            #expect((report["replenishedBytes"] as? Int64 ?? 0) >= 2 * 3_000_000)
            #expect(try TestSupport.poolStatus(pool).remainingCapacity == 16 << 20)
            let human = try FS.provideo(pool, "record", dir + "/c.mov", "--replenish", stdin: input)
            #expect(human.stdout.hasSuffix(": 16.0 MiB of 16.0 MiB remain\n") && human.stdout.contains("\nreplenished the reserve by "),
                    "\(human.stdout)")
        }
    }

    /// The summary's remaining capacity has the three significant digits `status` shows: a take
    /// of 11.4 MiB in a 16 MiB pool leaves "4.xx MiB", where one decimal hid a take's size
    /// ("1.5 GiB of 1.5 GiB remain" after 50 MiB); one append is "1 append".
    @Test func theSummarysFiguresAreStatus() throws {
        try FS.withScratchPool(capacity: "16M") { dir, pool in
            let result = try FS.provideo(pool, "record", dir + "/a.mov", stdin: Data(TestSupport.pattern(12_000_000, seed: 3)))
            #expect(result.status == 0, "\(result.stderr)")
            let remaining = try TestSupport.poolStatus(pool).remainingCapacity
            #expect(remaining < 5 << 20 && remaining >= 1 << 20, "\(remaining)")
            let figure = ByteFormat.significant(remaining)
            #expect(figure.split(separator: " ")[0].split(separator: ".").last?.count == 2, "\(figure)")
            #expect(result.stdout.contains("reserve: \(figure) of 16.0 MiB remain"), "\(result.stdout)")
            let one = try FS.provideo(pool, "record", dir + "/b.mov", stdin: Data(TestSupport.pattern(1000, seed: 4)))
            #expect(one.stdout.contains(", 1 append, append p99 "), "\(one.stdout)")
        }
    }

    /// A read error mid-take (the encoder's connection reset) ends the take like end of input:
    /// every byte received is at the destination, and the exit status (1) and message say the
    /// input failed. An input that fails at once (a directory) records nothing and leaves no
    /// file.
    @Test func aFailedReadKeepsWhatArrived() throws {
        try TestSupport.withScratch { scratch in
            let pool = scratch + "/pool"
            try TestSupport.run("provideo", ["--pool", pool, "create", "--capacity", "16M"])
            // A Unix stream socket closed with unread data of its own: the reader gets every
            // byte sent, then ECONNRESET (unix_release_sock).
            var ends: [Int32] = [0, 0]
            #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0)
            let recorder = Process()
            recorder.executableURL = URL(fileURLWithPath: TestSupport.productsDirectory + "/provideo")
            recorder.arguments = ["--pool", pool, "record", scratch + "/take.mov", "--bitrate", "100M"]
            recorder.standardInput = FileHandle(fileDescriptor: ends[1], closeOnDealloc: false)
            let errors = Pipe()
            recorder.standardError = errors
            recorder.standardOutput = Pipe()
            try recorder.run()
            #expect(write(ends[1], "unread", 6) == 6)
            close(ends[1])
            let input = TestSupport.pattern(3_000_000, seed: 21)
            let sent = input.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    let n = write(ends[0], bytes.baseAddress! + offset, bytes.count - offset)
                    if n <= 0 { break }
                    offset += n
                }
                return offset
            }
            #expect(sent == input.count)
            usleep(500_000)
            close(ends[0])
            recorder.waitUntilExit()
            let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(recorder.terminationStatus == 1)
            #expect(message.contains("reading the input failed: Connection reset by peer; the 2.9 MiB received until "
                                     + "then are at \(scratch)/take.mov"), "\(message)")
            let kept = TestSupport.fileHolds(scratch + "/take.mov", input)
            #expect(kept, "the take holds every byte received")

            let directory = try TestSupport.run("/bin/sh", ["-c", "\(TestSupport.productsDirectory)/provideo --pool \(pool) "
                                                           + "record \(scratch)/none.mov < \(scratch)"])
            #expect(directory.status == 1)
            #expect(directory.stderr.contains("reading the input failed: Is a directory; nothing was recorded"),
                    "\(directory.stderr)")
            #expect(!FileManager.default.fileExists(atPath: scratch + "/none.mov"))
            #expect(try TestSupport.poolListing(pool).captures.isEmpty)
        }
    }

    @Test(arguments: [SIGTERM, SIGINT])
    func stopSignalFinishesTheCapture(signal: Int32) throws {
        try TestSupport.kernelSettings.reading { try stopSignal(signal) }
    }

    private func stopSignal(_ signal: Int32) throws {
        try TestSupport.withScratch { scratch in
            let pool = scratch + "/pool"
            try TestSupport.run("provideo", ["--pool", pool, "create", "--capacity", "32M"])
            let destination = scratch + "/take.mov"
            let recorder = try TestSupport.start("provideo", ["--pool", pool, "record", destination, "--bitrate", "80M"],
                                                 stdinPipe: true)
            defer { if recorder.isRunning { recorder.terminate() } }
            let bytes = TestSupport.pattern(3_000_001, seed: 11)
            let input = (recorder.standardInput as! Pipe).fileHandleForWriting
            try input.write(contentsOf: Data(bytes))
            // Wait until the capture is running and has taken every byte, as another process sees it.
            for _ in 0..<100 {
                let status = try TestSupport.run("provideo", ["--pool", pool, "status", "--json"])
                if status.stdout.contains("\"bytesWritten\" : 2") || status.stdout.contains("\"bytesWritten\" : 3") { break }
                usleep(50_000)
            }
            usleep(300_000)
            kill(recorder.processIdentifier, signal)
            for _ in 0..<200 where recorder.isRunning { usleep(50_000) }
            #expect(!recorder.isRunning, "the recorder ignored the signal")
            if recorder.isRunning { kill(recorder.processIdentifier, SIGKILL) }
            recorder.waitUntilExit()
            let output = String(decoding: (recorder.standardOutput as! Pipe).fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(recorder.terminationReason == .exit)
            #expect(recorder.terminationStatus == 0)
            #expect(output.contains("3000001 bytes"))
            #expect(output.contains("engine io_uring"))
            #expect(TestSupport.fileHolds(destination, bytes))
            let after = try TestSupport.run("provideo", ["--pool", pool, "status", "--json"])
            #expect(after.stdout.contains("\"busyReasons\" : [\n\n  ]") || after.stdout.contains("\"busyReasons\" : []"))
        }
    }

    @Test(arguments: [
        (["record"], Int32(2), "missing DEST"), (["record", "/tmp/x.mov", "--overrun", "maybe"], 2, "--overrun"),
        (["record", "/tmp/x.mov", "--bitrate", "fast"], 2, "invalid bitrate"), (["create"], 2, "--capacity"),
        (["create", "--capacity", "12x"], 2, "unknown unit"), (["frobnicate"], 2, "unknown command"),
        (["status"], 1, "no pool at"),
    ])
    func badInvocationsExitWithTheRightStatus(arguments: [String], status: Int32, message: String) throws {
        try TestSupport.withScratch { scratch in
            let result = try TestSupport.run("provideo", ["--pool", scratch + "/nowhere"] + arguments)
            #expect(result.status == status)
            #expect(result.stderr.contains(message))
            #expect(!FileManager.default.fileExists(atPath: scratch + "/nowhere"))
        }
    }
}

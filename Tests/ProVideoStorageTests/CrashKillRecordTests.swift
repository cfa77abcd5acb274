import Foundation
import Glibc
import TestSupport
import Testing
@testable import ProVideoStorage

extension CrashTests {
    /// F11: `kill -9` of `provideo record --durability 0.2` fed a real fragmented ProRes MOV at
    /// a steady pace, at random points. After `provideo recover` the destination is a prefix of
    /// what was sent that ffprobe decodes, missing no more than the bound below; the pool's
    /// accounting is exact.
    @Suite struct KillRecorder {
        static let iterations = 20
        static let durability = 0.2
        /// The feed: 64 KiB every 25 ms (~2.6 MB/s, ~3x real time for this stream, so the 6.3 MB
        /// file lasts ~2.4 s and the test stays well under two minutes).
        static let feedChunk = 64 << 10
        static let feedPeriod = 0.025

        /// Where the last whole top-level box of a MOV prefix ends (ISO/IEC 14496-12 §4.2: a
        /// 32-bit size, 1 for a 64-bit size after the type, 0 for "to the end of the file").
        static func wholeBoxesEnd(_ bytes: [UInt8]) -> Int {
            func bigEndian(_ at: Int, _ count: Int) -> UInt64 { bytes[at..<at + count].reduce(0) { $0 << 8 | UInt64($1) } }
            var offset = 0
            while offset + 8 <= bytes.count {
                var size = bigEndian(offset, 4)
                if size == 1 {
                    guard offset + 16 <= bytes.count else { break }
                    size = bigEndian(offset + 8, 8)
                }
                guard size >= 8, size <= UInt64(bytes.count - offset) else { break }
                offset += Int(size)
            }
            return offset
        }

        /// The field case of a stress-mode CI run: the first 3,604,480 bytes of the kill test's
        /// source (a prefix ending inside a `moof`) do not open in ffprobe, and their whole boxes
        /// (3,604,374 bytes) decode: what the kill test probes.
        @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/ffmpeg")))
        func aPrefixCutInsideAFragmentDecodesToItsLastWholeBox() throws {
            try TestSupport.withScratch("whole-boxes") { dir in
                try TestSupport.shell("ffmpeg -hide_banner -loglevel error -f lavfi -i testsrc2=size=320x180:rate=25 -t 8 "
                                      + "-c:v prores_ks -profile:v 3 -f mov -movflags frag_keyframe+empty_moov '\(dir)/source.mov'")
                let prefix = Array(TestSupport.readFile(dir + "/source.mov").prefix(3_604_480))
                try #require(prefix.count == 3_604_480)
                try Data(prefix).write(to: URL(fileURLWithPath: dir + "/cut.mov"))
                #expect(try CrashKit.probe(dir + "/cut.mov") == nil, "ffprobe now opens a file cut inside a moof")
                let end = Self.wholeBoxesEnd(prefix)
                #expect(end == 3_604_374)
                try Data(prefix[..<end]).write(to: URL(fileURLWithPath: dir + "/whole.mov"))
                let probe = try CrashKit.probe(dir + "/whole.mov")
                #expect(probe?.codec == "prores" && (probe?.frames ?? 0) >= 1, "\(String(describing: probe))")
            }
        }

        @Test func killNineAtRandomPoints() throws {
            _ = CrashKit.ignoreSIGPIPE
            try TestSupport.withScratch("crash-kill9") { dir in
                let movie = dir + "/source.mov"
                try TestSupport.shell("ffmpeg -hide_banner -loglevel error -f lavfi -i testsrc2=size=320x180:rate=25 -t 8 "
                                      + "-c:v prores_ks -profile:v 3 -f mov -movflags frag_keyframe+empty_moov '\(movie)'")
                let source = TestSupport.readFile(movie)
                try #require(source.count > 1 << 20)
                let pool = dir + "/pool"
                try CrashKit.createPool(pool, capacity: "32M")
                defer { _ = try? CrashKit.provideo(pool, ["destroy"]) }
                let capacity = try CrashKit.status(pool).initialCapacity

                // The bound on what a kill may lose, from Capture.swift / CaptureOptions.swift and
                // Tools/provideo/Commands.swift (Recorder.capture):
                // - input not yet appended: what sits in the pipe (at most the pipe's 64 KiB
                //   capacity) plus the one read being appended (a read from a pipe returns at most
                //   its 64 KiB capacity; each read is one frame);
                // - appended but not committed: a commit starts at the first append at least one
                //   durability interval after the previous commit started, and covers every frame
                //   appended so far (the filling buffer is written, padded, when no full buffer is
                //   in flight). It is durable once that write, an fdatasync and the 16-byte O_DSYNC
                //   commit record complete: three flushes of the pool's filesystem, F each. Input
                //   arriving meanwhile is not covered, and the next commit starts only after this
                //   one ends. So: input of one interval, plus of the commit in progress (3 F), plus
                //   of the next one's wait (one more interval). F is measured while the test runs
                //   (`FlushLatencyProbe`): on a quiet disk a few ms, under other processes'
                //   writeback up to seconds, which is what the bound then allows;
                // - buffers in flight: while a full buffer (writeSize, 4 MiB by default) is being
                //   written, a commit covers only what landed before it. With `--bitrate 20M` the
                //   budget is the 16 MiB minimum, four 4 MiB buffers; this 6.3 MB stream fills at
                //   most one, so at most one 4 MiB buffer is ever in flight, and none before 4 MiB
                //   were appended.
                let writeSize: Int64 = 4 << 20
                let pipeCapacity: Int64 = 64 << 10
                let flushes = FlushLatencyProbe(directory: dir)
                defer { flushes.stop() }
                var decodable = 0
                var rng = SystemRandomNumberGenerator()
                var losses: [String] = []
                for iteration in 0..<Self.iterations {
                    let destination = dir + "/take-\(iteration).mov"
                    let killAt = Double.random(in: 0.5...2.0, using: &rng)
                    let recorder = try TestSupport.start("provideo", ["--pool", pool, "record", destination,
                                                                      "--durability", "\(Self.durability)", "--bitrate", "20M"],
                                                         stdinPipe: true)
                    let input = (recorder.standardInput as! Pipe).fileHandleForWriting
                    // Feed only once the capture is running (its journal names the engine): starting
                    // it flushes files, which can take seconds on this shared disk, and is not part
                    // of what a kill during recording may lose.
                    let journal = { TestSupport.onlyCapture(pool) + "/capture.json" }
                    let live = Date(timeIntervalSinceNow: 30)
                    while recorder.isRunning && Date() < live
                            && !(FileManager.default.contents(atPath: journal()).map { !String(decoding: $0, as: UTF8.self).contains("\"starting\"") } ?? false) {
                        usleep(5_000)
                    }
                    var sent = 0
                    var committedBeforeKill: Int64 = 0
                    var lastAdvance = 0.0, longestWithoutCommit = 0.0
                    _ = flushes.takeWorst()
                    let started = Date()
                    while true {
                        let elapsed = Date().timeIntervalSince(started)
                        let committed = CrashKit.committed(pool)
                        if committed != committedBeforeKill {
                            committedBeforeKill = committed
                            lastAdvance = elapsed
                        }
                        longestWithoutCommit = max(longestWithoutCommit, elapsed - lastAdvance)
                        if elapsed >= killAt || sent == source.count || !recorder.isRunning { break }
                        let next = min(sent + Self.feedChunk, source.count)
                        let written = CrashKit.writeAll(input.fileDescriptor, source[sent..<next])
                        sent += written
                        if written < next - (sent - written) { break }
                        let due = Double(sent / Self.feedChunk) * Self.feedPeriod
                        let wait = due - Date().timeIntervalSince(started)
                        if wait > 0 { usleep(UInt32(wait * 1e6)) }
                    }
                    let elapsed = Date().timeIntervalSince(started)
                    committedBeforeKill = max(committedBeforeKill, CrashKit.committed(pool))
                    let wasRunning = recorder.isRunning
                    kill(recorder.processIdentifier, SIGKILL)
                    try? input.close()
                    recorder.waitUntilExit()
                    #expect(wasRunning, "iteration \(iteration): the recorder ended before the kill")
                    #expect(recorder.terminationReason == .uncaughtSignal && recorder.terminationStatus == SIGKILL)

                    let recover = try CrashKit.provideo(pool, ["recover"])
                    #expect(recover.status == 0, "iteration \(iteration): recover: \(recover)")
                    // A capture killed before its first commit has nothing durable: no file at all.
                    let placed = CrashKit.exists(destination)
                    let recorded = TestSupport.readFile(destination)
                    let length = Int64(recorded.count)
                    if placed {
                        #expect(length > 0, "iteration \(iteration): an empty file was placed at the destination")
                        #expect(recover.stdout.contains("(\(length) bytes) to \(destination)"),
                                "iteration \(iteration): \(recover.stdout)")
                    } else {
                        #expect(recover.stdout.contains("nothing to recover"), "iteration \(iteration): \(recover.stdout)")
                    }
                    let rate = Double(sent) / max(elapsed, 0.001)
                    let flush = flushes.takeWorst()
                    let bound = Int64((2 * Self.durability + 3 * flush) * rate) + 2 * pipeCapacity
                        + (Int64(sent) >= writeSize ? writeSize : 0)
                    losses.append(String(format: "%d/%d (flush up to %.0f ms, %.2f s without a commit)",
                                         sent - recorded.count, sent, flush * 1000, longestWithoutCommit))
                    #expect(length >= committedBeforeKill,
                            "iteration \(iteration): recovered \(length) bytes, but \(committedBeforeKill) were committed before the kill")
                    #expect(length <= Int64(sent))
                    #expect(length >= Int64(sent) - bound,
                            "iteration \(iteration): recovered \(length) of \(sent) bytes sent in \(elapsed) s; the bound allows losing \(bound) (flushes took up to \(flush) s)")
                    // A recovered file longer than the input must fail this test, not the runner.
                    // Compared outside #expect, which would diff megabytes element by element.
                    let isPrefix = recorded.count <= source.count && recorded[...] == source[0..<min(recorded.count, source.count)]
                    #expect(isPrefix, "iteration \(iteration): \(recorded.count) bytes recovered, not a prefix of the input")
                    // A prefix of 64 KiB holds the header and at least one whole frame: its whole
                    // boxes must decode. Not the prefix itself: ffmpeg's MOV demuxer refuses a
                    // file cut inside a `moof` ("error reading header: End of file"), as it did
                    // the first 3,604,480 bytes of this very source, which is no fault of recovery.
                    if length >= 64 << 10 {
                        let whole = dir + "/whole-boxes.mov"
                        try Data(recorded[..<Self.wholeBoxesEnd(recorded)]).write(to: URL(fileURLWithPath: whole))
                        let probe = try CrashKit.probe(whole)
                        #expect(probe?.codec == "prores" && (probe?.frames ?? 0) >= 1,
                                "iteration \(iteration): ffprobe cannot decode the whole boxes of the \(length) bytes recovered")
                        if probe != nil { decodable += 1 }
                        try FileManager.default.removeItem(atPath: whole)
                    }

                    let sane = try CrashKit.expectSane(pool, "kill -9 iteration \(iteration)")
                    #expect(sane.remainingCapacity + TestSupport.roundUp(length, CrashKit.unit) == capacity,
                            "iteration \(iteration): remaining \(sane.remainingCapacity) + recording \(length) vs capacity \(capacity)")
                    if placed { try FileManager.default.removeItem(atPath: destination) }
                    let replenish = try CrashKit.provideo(pool, ["replenish"])
                    #expect(replenish.status == 0, "replenish: \(replenish)")
                    #expect(try CrashKit.status(pool).remainingCapacity == capacity)
                }
                print("kill -9 losses (bytes lost/sent): \(losses.joined(separator: "; "))")
                // Per iteration, the bound demands a decodable recovery whenever it demands more
                // than 64 KiB; overall, at least one must have been recovered and decoded.
                #expect(decodable >= 1, "none of the \(Self.iterations) recoveries decodes")
            }
        }
    }
}

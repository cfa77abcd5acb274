import Foundation
import Glibc
import TestSupport
import Testing
@testable import ProVideoStorage

/// `provideo record` on real streams, status from another process, and the pwrite engine, on
/// loop-mounted filesystems (root only; one at a time).
@Suite(.serialized, .enabled(if: TestSupport.isRoot, "needs root: loop devices, mounts and sysctls"))
struct FilesystemRecordTests {
    @Suite struct Recording {
        static let ffmpegSource = "-hide_banner -loglevel error -f lavfi -i testsrc2=size=640x360:rate=25 -t 2 "
            + "-c:v prores_ks -profile:v 3"

        /// A real ProRes 422 HQ stream (fragmented MOV on a pipe) recorded through the pool
        /// decodes to exactly the frames of a direct encode of the same source.
        @Test(arguments: FS.types)
        func proResThroughThePool(type: String) throws {
            try FS.withPool(type, capacity: "64M") { fs, pool in
                let before = try TestSupport.poolStatus(pool)
                let recorded = fs.mountPoint + "/take.mov"
                let direct = fs.mountPoint + "/direct.mov"
                let pipeline = try TestSupport.run("/bin/bash", ["-c", """
                    set -o pipefail
                    ffmpeg \(Self.ffmpegSource) -f mov -movflags frag_keyframe+empty_moov pipe:1 \
                      | '\(TestSupport.provideoPath)' --pool '\(pool)' record '\(recorded)' --bitrate 100M
                    """])
                #expect(pipeline.status == 0, "\(pipeline.stderr)")
                try TestSupport.shell("ffmpeg \(Self.ffmpegSource) -f mov -movflags frag_keyframe+empty_moov '\(direct)'")
                let size = try TestSupport.statSizes(recorded).size
                #expect(size > 100_000)
                #expect(pipeline.stdout.contains("(\(size) bytes)"), "\(pipeline.stdout)")
                let recordedFrames = try TestSupport.shell("ffmpeg -hide_banner -loglevel error -i '\(recorded)' -f framemd5 -")
                let directFrames = try TestSupport.shell("ffmpeg -hide_banner -loglevel error -i '\(direct)' -f framemd5 -")
                let hashes = { (text: String) in text.split(separator: "\n").filter { !$0.hasPrefix("#") } }
                #expect(hashes(recordedFrames).count == 50)
                #expect(hashes(recordedFrames) == hashes(directFrames))
                let unit = try FS.allocationUnit(before, mount: fs.mountPoint)
                let after = try TestSupport.poolStatus(pool)
                #expect(after.remainingCapacity == before.remainingCapacity - TestSupport.roundUp(size, unit))
                #expect(after.busyReasons == [])
            }
        }

        /// While one process records from a pipe fed slowly, another process's
        /// `status --json` shows `capturing` and a remaining capacity that falls.
        /// A recording gets 0666 less the recorder's umask whether it was renamed into place
        /// (same filesystem) or copied (tmpfs), as `touch` would give: with umask 002, 664.
        @Test func recordingModeFollowsTheUmaskOnBothPaths() throws {
            try FS.withPool("ext4", capacity: "16M") { fs, pool in
                try LoopFilesystem.with("tmpfs", megabytes: 32) { tmp in
                    for destination in [fs.mountPoint + "/renamed.mov", tmp.mountPoint + "/copied.mov"] {
                        let result = try TestSupport.run("/bin/sh", ["-c", """
                            umask 002 && head -c 300001 /dev/urandom | '\(TestSupport.provideoPath)' --pool '\(pool)' \
                              record '\(destination)' --bitrate 10M
                            """])
                        #expect(result.status == 0, "\(result.stderr)")
                        var st = stat()
                        #expect(stat(destination, &st) == 0)
                        #expect(st.st_mode & 0o777 == 0o664, "\(destination): mode \(String(st.st_mode & 0o777, radix: 8))")
                    }
                }
            }
        }

        @Test func statusFromAnotherProcessDuringACapture() throws {
            try FS.withPool("ext4", capacity: "64M") { fs, pool in
                let destination = fs.mountPoint + "/take.mov"
                let recorder = try TestSupport.start("provideo", ["--pool", pool, "record", destination, "--bitrate", "50M"],
                                                     stdinPipe: true)
                let input = (recorder.standardInput as! Pipe).fileHandleForWriting
                var closed = false
                defer {
                    if !closed { try? input.close() }
                    TestSupport.wait(recorder)
                }
                let chunk = TestSupport.pattern(1 << 20, seed: 77)
                var fed: [UInt8] = []
                var samples: [(fed: Int, remaining: Int64, busy: BusyReasons)] = []
                for round in 0..<24 {
                    var piece = chunk
                    piece[0] = UInt8(round)
                    try input.write(contentsOf: piece)
                    fed.append(contentsOf: piece)
                    usleep(150_000)
                    let status = try TestSupport.poolStatus(pool)
                    samples.append((fed.count, status.remainingCapacity, status.busyReasons))
                }
                #expect(samples.allSatisfy { $0.busy == [.capturing] }, "\(samples.map(\.busy))")
                let remaining = samples.map(\.remaining)
                #expect(zip(remaining, remaining.dropFirst()).allSatisfy { $0 >= $1 }, "remainingCapacity rose: \(remaining)")
                #expect(remaining[11] < 64 << 20, "nothing landed after 12 MiB: \(remaining)")
                #expect(remaining.last! < remaining[11], "remainingCapacity stopped falling: \(remaining)")
                #expect(remaining.last! <= (64 << 20) - (16 << 20), "remainingCapacity did not fall with the feed: \(remaining)")
                try input.close()
                closed = true
                #expect(TestSupport.wait(recorder))
                #expect(recorder.terminationStatus == 0)
                #expect(TestSupport.fileEquals(destination, fed))
                let after = try TestSupport.poolStatus(pool)
                #expect(after.busyReasons == [])
                #expect(after.remainingCapacity == (64 << 20) - Int64(fed.count))
            }
        }

        /// A recorder that pauses (its input idle, the pipe still open) still publishes what
        /// landed: another process sees it within about a second.
        @Test func progressIsVisibleWhileTheRecorderWaitsForInput() throws {
            try FS.withPool("ext4", capacity: "64M") { fs, pool in
                let recorder = try TestSupport.start("provideo", ["--pool", pool, "record", fs.mountPoint + "/take.mov",
                                                                  "--bitrate", "50M"], stdinPipe: true)
                let input = (recorder.standardInput as! Pipe).fileHandleForWriting
                defer {
                    try? input.close()
                    TestSupport.wait(recorder)
                }
                try input.write(contentsOf: TestSupport.pattern(12 << 20, seed: 78))
                usleep(2_000_000)
                let status = try TestSupport.poolStatus(pool)
                #expect(status.busyReasons == [.capturing])
                #expect(status.remainingCapacity <= (64 << 20) - (8 << 20),
                        "12 MiB were handed to the recorder 2 s ago, but another process sees \(status.remainingCapacity)")
            }
        }

        /// F10: with io_uring disabled by sysctl, a capture runs on the pwrite engine and
        /// `status` says so.
        @Test func ioUringDisabledFallsBackToPwrite() throws {
            let sysctl = "/proc/sys/kernel/io_uring_disabled"
            let original = try String(contentsOfFile: sysctl, encoding: .utf8)
            defer {
                let now = try? String(contentsOfFile: sysctl, encoding: .utf8)
                #expect(now == original, "io_uring_disabled was not restored")
            }
            try LoopFilesystem.with("ext4") { fs in
                let path = fs.mountPoint + "/pool"
                let pool = try Pool.create(at: path, capacity: 32 << 20, measuringBandwidth: false)
                defer { FS.destroyQuietly(path) }
                try TestSupport.withSysctl(sysctl, "2") {
                    let idle = try TestSupport.poolStatus(path)
                    #expect(idle.engine.hasPrefix("pwrite"), "\(idle.engine)")
                    let frames = TestSupport.frames(count: 300, size: 40_009, seed: 10)
                    let destination = fs.mountPoint + "/take.mov"
                    let capture = try pool.startCapture(to: destination, options: CaptureOptions(bitrate: 100_000_000, bufferBudget: 8 << 20, writeSize: 1 << 20))
                    for frame in frames { try capture.append(frame) }
                    #expect(capture.statistics.engine == "pwrite")
                    let during = try TestSupport.poolStatus(path)
                    #expect(during.engine == "pwrite")
                    #expect(during.captures.first?.engine == "pwrite")
                    #expect(during.busyReasons == [.capturing])
                    let result = try capture.finish()
                    #expect(result.statistics.engine == "pwrite")
                    #expect(result.length == 300 * 40_009)
                    #expect(TestSupport.fileEquals(destination, TestSupport.concatenated(frames)))

                    // The CLI recorder too.
                    let input = TestSupport.pattern(3_000_001, seed: 12)
                    let recorded = try FS.provideo(path, "record", fs.mountPoint + "/cli.mov", stdin: Data(input))
                    #expect(recorded.status == 0, "\(recorded.stderr)")
                    #expect(recorded.stdout.contains("engine pwrite"), "\(recorded.stdout)")
                    #expect(TestSupport.fileEquals(fs.mountPoint + "/cli.mov", input))
                }
            }
        }
    }
}

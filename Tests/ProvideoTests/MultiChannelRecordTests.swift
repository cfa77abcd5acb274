import Foundation
import Glibc
import TestSupport
import Testing
@testable import ProVideoStorage

/// Several `provideo record` processes in one pool at once: real ProRes streams, a recorder
/// killed among running ones, and admission against the pool's bandwidth.
@Suite(.serialized) struct MultiChannelRecordTests {
    /// Four different real ProRes streams (four sources, four profiles), encoded once to files.
    static func proResInputs(in directory: String) throws -> [[UInt8]] {
        let sources = ["testsrc2", "smptebars", "mandelbrot", "rgbtestsrc"]
        return try sources.enumerated().map { profile, source in
            let file = directory + "/input-\(profile).mov"
            try TestSupport.shell("ffmpeg -hide_banner -loglevel error -f lavfi -i \(source)=size=640x360:rate=25 -t 2 "
                                  + "-c:v prores_ks -profile:v \(profile) -f mov '\(file)'")
            return TestSupport.readFile(file)
        }
    }

    /// A `provideo record` process fed through a pipe the test writes.
    struct Recorder {
        let process: Process
        let destination: String

        init(_ pool: String, _ destination: String, bitrate: String = "100M", extra: [String] = []) throws {
            process = try TestSupport.start(TestSupport.provideoPath, ["--pool", pool, "record", destination,
                                                                      "--bitrate", bitrate, "--durability", "0.2"] + extra,
                                            stdinPipe: true)
            self.destination = destination
        }

        func write(_ bytes: ArraySlice<UInt8>) {
            (process.standardInput as! Pipe).fileHandleForWriting.write(Data(bytes))
        }

        func close() { try? (process.standardInput as! Pipe).fileHandleForWriting.close() }

        /// Closes the input and waits (at most 60 s) for the summary; returns the exit status.
        func finish() -> Int32 {
            close()
            TestSupport.wait(process)
            return process.terminationStatus
        }

        var stderr: String {
            String(decoding: (process.standardError as! Pipe).fileHandleForReading.availableData, as: UTF8.self)
        }
    }

    /// Polls `status --json` until `condition` holds (at most 30 s).
    static func waitForStatus(_ pool: String, _ what: String, _ condition: (PoolStatus) -> Bool,
                              sourceLocation: SourceLocation = #_sourceLocation) throws -> PoolStatus {
        let deadline = Date(timeIntervalSinceNow: 30)
        var status = try TestSupport.poolStatus(pool)
        while !condition(status) && Date() < deadline {
            usleep(50_000)
            status = try TestSupport.poolStatus(pool)
        }
        #expect(condition(status), "waited 30 s for \(what): \(status.captures)", sourceLocation: sourceLocation)
        return status
    }

    /// Four recorders at once, each its own real ProRes stream: all four files are
    /// byte-identical to their inputs, the remaining capacity fell by the four lengths rounded
    /// to the allocation unit, and `check` passes.
    @Test func fourRecordersIntoOnePool() throws {
        try TestSupport.withScratch("four-recorders") { scratch in
            try Self.fourRecorders(pool: scratch + "/pool", directory: scratch)
        }
    }

    @Test(.enabled(if: TestSupport.isRoot, "needs root: loop devices and mounts"), arguments: FS.types)
    func fourRecordersOnEachFilesystem(type: String) throws {
        try LoopFilesystem.with(type) { fs in
            defer { FS.destroyQuietly(fs.mountPoint + "/pool") }
            try Self.fourRecorders(pool: fs.mountPoint + "/pool", directory: fs.mountPoint)
        }
    }

    static func fourRecorders(pool: String, directory: String) throws {
        let inputs = try proResInputs(in: directory)
        let created = try FS.provideo(pool, "create", "--capacity", "64M", "--bandwidth", "10G")
        try #require(created.status == 0, "\(created.stderr)")
        defer { FS.destroyQuietly(pool) }
        let before = try TestSupport.poolStatus(pool)
        let recorders = try (0..<4).map { try Recorder(pool, directory + "/camera-\($0).mov") }
        _ = try waitForStatus(pool, "four running captures") { $0.captures.count == 4 }
        let chunk = 65_536
        for offset in stride(from: 0, to: inputs.map(\.count).max()!, by: chunk) {
            for (index, recorder) in recorders.enumerated() where offset < inputs[index].count {
                recorder.write(inputs[index][offset..<min(offset + chunk, inputs[index].count)])
            }
        }
        let statuses = recorders.map { $0.finish() }
        #expect(statuses == [0, 0, 0, 0], "\(recorders.map(\.stderr))")
        let unit = try FS.allocationUnit(before, mount: directory)
        var recorded: Int64 = 0
        for (index, recorder) in recorders.enumerated() {
            let exact = TestSupport.fileEquals(recorder.destination, inputs[index])
            #expect(exact, "\(recorder.destination) differs from its input (\(inputs[index].count) bytes)")
            recorded += TestSupport.roundUp(Int64(inputs[index].count), unit)
        }
        let after = try TestSupport.poolStatus(pool)
        #expect(after.remainingCapacity == before.remainingCapacity - recorded)
        #expect(after.captures.isEmpty && after.busyReasons.isEmpty)
        let check = try FS.provideo(pool, "check")
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
    }

    /// One of four recorders is killed with SIGKILL mid-take: `provideo recover`, run while the
    /// other three still record, salvages that one alone, up to its last commit; the three
    /// finish normally with byte-identical files.
    @Test func oneOfFourKilled() throws {
        try TestSupport.withScratch("one-of-four-killed") { scratch in
            let pool = scratch + "/pool"
            let inputs = try Self.proResInputs(in: scratch)
            try #require(FS.provideo(pool, "create", "--capacity", "64M", "--bandwidth", "10G").status == 0)
            defer { FS.destroyQuietly(pool) }
            let recorders = try (0..<4).map { try Recorder(pool, scratch + "/camera-\($0).mov") }
            _ = try Self.waitForStatus(pool, "four running captures") { $0.captures.count == 4 }
            let halves = inputs.map { $0.count / 2 }
            for (index, recorder) in recorders.enumerated() { recorder.write(inputs[index][..<halves[index]]) }
            let victim = 2
            let committed = try Self.waitForStatus(pool, "the first halves committed") { status in
                status.captures.count == 4 && status.captures.allSatisfy { capture in
                    recorders.indices.contains { capture.destination.hasSuffix("camera-\($0).mov")
                        && capture.committedBytes >= Int64(halves[$0]) }
                }
            }.captures.first { $0.destination.hasSuffix("camera-\(victim).mov") }?.committedBytes ?? 0
            kill(recorders[victim].process.processIdentifier, SIGKILL)
            recorders[victim].process.waitUntilExit()
            let recover = try FS.provideo(pool, "recover")
            #expect(recover.status == 0, "\(recover.stderr)")
            #expect(recover.stdout.components(separatedBy: "recovered ").count == 2, "\(recover.stdout)")
            #expect(recover.stdout.contains("camera-\(victim).mov"), "\(recover.stdout)")
            let during = try TestSupport.poolStatus(pool)
            #expect(during.captures.count == 3, "the other three must still run: \(during.captures)")
            for (index, recorder) in recorders.enumerated() where index != victim {
                recorder.write(inputs[index][halves[index]...])
                #expect(recorder.finish() == 0, "\(recorder.stderr)")
                let exact = TestSupport.fileEquals(recorder.destination, inputs[index])
                #expect(exact, "\(recorder.destination) differs from its input")
            }
            let salvaged = TestSupport.readFile(recorders[victim].destination)
            #expect(salvaged.count >= Int(committed) && salvaged.count <= halves[victim],
                    "salvaged \(salvaged.count) bytes; \(committed) were committed, \(halves[victim]) sent")
            let prefix = salvaged[...] == inputs[victim][..<salvaged.count]
            #expect(prefix, "the salvaged take is not the start of its input")
            let check = try FS.provideo(pool, "check")
            #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
        }
    }

    /// One destination per take, across processes (issue 25, item 7): a second `record` to the
    /// destination of a running one (spelled through a symlinked directory) is refused with the
    /// other's pid, and the first take lands whole; the same name in another directory records.
    @Test func aRunningCapturesDestinationIsRefused() throws {
        try TestSupport.withScratch("one-destination") { scratch in
            let pool = scratch + "/pool"
            try #require(FS.provideo(pool, "create", "--capacity", "32M").status == 0)
            defer { FS.destroyQuietly(pool) }
            try FileManager.default.createDirectory(atPath: scratch + "/b", withIntermediateDirectories: false)
            try FileManager.default.createSymbolicLink(atPath: scratch + "/alias", withDestinationPath: scratch)
            let first = try Recorder(pool, scratch + "/take.mov")
            _ = try Self.waitForStatus(pool, "the first capture running") { $0.captures.count == 1 }
            let input = TestSupport.pattern(3 << 20, seed: 7)
            first.write(input[..<(1 << 20)])
            for spelling in [scratch + "/take.mov", scratch + "/alias/take.mov", scratch + "/b/../take.mov"] {
                let second = try FS.provideo(pool, "record", spelling, stdin: Data([1, 2, 3]))
                #expect(second.status == 1, "\(spelling): \(second.stdout)")
                #expect(second.stderr.contains("already recording to it")
                        && second.stderr.contains("process \(first.process.processIdentifier)"), "\(second.stderr)")
            }
            let elsewhere = try FS.provideo(pool, "record", scratch + "/b/take.mov", stdin: Data([1, 2, 3]))
            #expect(elsewhere.status == 0, "\(elsewhere.stderr)")
            first.write(input[(1 << 20)...])
            #expect(first.finish() == 0, "\(first.stderr)")
            #expect(TestSupport.fileEquals(scratch + "/take.mov", input), "the first take is not whole at its destination")
            #expect(TestSupport.readFile(scratch + "/b/take.mov") == [1, 2, 3])
        }
    }

    /// The same directory entry reached through a bind mount of its directory is the same
    /// destination (issue 37, item 7: admitted while the path texts differed, and one take
    /// then ended held in the pool): refused with the running capture's pid, whose take lands
    /// whole. Root only (a bind mount); the mount is undone even when the test fails.
    @Test(.enabled(if: TestSupport.isRoot, "needs root: a bind mount"))
    func aDestinationThroughABindMountIsRefused() throws {
        try TestSupport.withScratch("bind-destination") { scratch in
            let pool = scratch + "/pool", takes = scratch + "/takes", bound = scratch + "/bound"
            for directory in [takes, bound] { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false) }
            try TestSupport.shell("mount --bind '\(takes)' '\(bound)'")
            defer { _ = try? TestSupport.shell("umount '\(bound)'") }
            try #require(FS.provideo(pool, "create", "--capacity", "32M").status == 0)
            defer { FS.destroyQuietly(pool) }
            let first = try Recorder(pool, takes + "/take.mov")
            _ = try Self.waitForStatus(pool, "the first capture running") { $0.captures.count == 1 }
            let input = TestSupport.pattern(2 << 20, seed: 9)
            first.write(input[..<(1 << 20)])
            let second = try FS.provideo(pool, "record", bound + "/take.mov", stdin: Data([1, 2, 3]))
            #expect(second.status == 1, "\(second.stdout)")
            #expect(second.stderr.contains("already recording to it")
                    && second.stderr.contains("process \(first.process.processIdentifier)"), "\(second.stderr)")
            let other = try FS.provideo(pool, "record", bound + "/other.mov", stdin: Data([4, 5]))
            #expect(other.status == 0, "another name in the bound directory records: \(other.stderr)")
            first.write(input[(1 << 20)...])
            #expect(first.finish() == 0, "\(first.stderr)")
            #expect(TestSupport.fileEquals(takes + "/take.mov", input), "the first take is not whole at its destination")
            #expect(try TestSupport.poolListing(pool).recordings.isEmpty, "a take ended held in the pool")
        }
    }

    /// With a bandwidth of 1 Gbit/s (800 Mbit/s admissible), two 400 Mbit/s captures are
    /// admitted and a third is refused with the numbers; `--force` starts it and `status`
    /// says so.
    @Test func admissionAgainstTheBandwidth() throws {
        try TestSupport.withScratch("admission") { scratch in
            let pool = scratch + "/pool"
            try #require(FS.provideo(pool, "create", "--capacity", "64M", "--bandwidth", "1G").status == 0)
            defer { FS.destroyQuietly(pool) }
            let first = try Recorder(pool, scratch + "/a.mov", bitrate: "400M")
            let second = try Recorder(pool, scratch + "/b.mov", bitrate: "400M")
            _ = try Self.waitForStatus(pool, "two running captures") { $0.captures.count == 2 }
            let refused = try FS.provideo(pool, "record", scratch + "/c.mov", "--bitrate", "400M", stdin: Data())
            #expect(refused.status == 1)
            // What was refused and why, first; then the numbers.
            #expect(refused.stderr.hasPrefix("provideo: not enough bandwidth to start a capture at 400 Mbit/s: the running "
                                              + "captures (2 × 400 Mbit/s) declare 800 Mbit/s of the 800 Mbit/s admissible "
                                              + "(80% of the pool's bandwidth, 1 Gbit/s), and this one would take them to "
                                              + "1.2 Gbit/s. "), "\(refused.stderr)")
            let refusedJSON = try FS.provideo(pool, "record", scratch + "/c.mov", "--bitrate", "400M", "--json", stdin: Data())
            #expect(refusedJSON.status == 1 && refusedJSON.stdout.hasPrefix("{\"error\":{\"code\":\"bandwidthExceeded\","),
                    "\(refusedJSON.stdout)")
            #expect(!FileManager.default.fileExists(atPath: scratch + "/c.mov"))
            let forced = try Recorder(pool, scratch + "/c.mov", bitrate: "400M", extra: ["--force"])
            let status = try Self.waitForStatus(pool, "three running captures") { $0.captures.count == 3 }
            #expect(status.admittedBitrate == 1_200_000_000)
            #expect(status.admissibleBitrate == 800_000_000)
            #expect(status.captures.filter(\.admittedOverBandwidth).map(\.destination) == [scratch + "/c.mov"])
            let human = try FS.provideo(pool, "status")
            #expect(human.stdout.contains("3 running, 1.2 Gbit/s of 800 Mbit/s admissible"), "\(human.stdout)")
            #expect(human.stdout.contains("--force"), "\(human.stdout)")
            for recorder in [first, second, forced] {
                recorder.write([1, 2, 3][...])
                #expect(recorder.finish() == 0, "\(recorder.stderr)")
            }
        }
    }
}

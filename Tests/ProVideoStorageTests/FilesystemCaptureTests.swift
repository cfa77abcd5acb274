import Foundation
import Glibc
import TestSupport
import Testing
@testable import ProVideoStorage

extension FS {
    /// Small buffers: the engine logic is the same at any size.
    static let options = CaptureOptions(bitrate: 100_000_000, bufferBudget: 8 << 20, writeSize: 1 << 20,
                                        durabilityInterval: 100_000_000)

    /// Captures `frames` into `pool` towards `destination` and finishes.
    @discardableResult
    static func capture(_ pool: Pool, _ frames: [[UInt8]], to destination: String) throws -> RecordingResult {
        let capture = try pool.startCapture(to: destination, options: options)
        for frame in frames { try capture.append(frame) }
        return try capture.finish()
    }

    /// The pool's state after a capture ended: nothing busy, no capture directory, and the
    /// accounting checks out.
    static func expectIdleAndConsistent(_ pool: Pool, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(try pool.busyReasons.isEmpty, sourceLocation: sourceLocation)
        #expect(!TestSupport.hasCapture(pool.path), "capture/ was left behind",
                sourceLocation: sourceLocation)
        let problems = try pool.check()
        #expect(problems == [], "check: \(problems)", sourceLocation: sourceLocation)
    }
}

extension FilesystemTests {
    /// Captures through the library API on ext4, XFS and btrfs.
    @Suite struct Captures {
        /// F3 and F9: exact lengths and contents, capacity accounting, storage full.
        @Test(arguments: FS.types)
        func capturesAreExact(type: String) throws {
            try LoopFilesystem.with(type) { fs in
                let path = fs.mountPoint + "/pool"
                let pool = try Pool.create(at: path, capacity: 64 << 20, measuringBandwidth: false)
                defer { FS.destroyQuietly(path) }
                let out = fs.mountPoint + "/out"
                try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
                let unit = try FS.allocationUnit(try TestSupport.poolStatus(path), mount: fs.mountPoint)

                // 1000 frames of 4097 bytes.
                let odd = TestSupport.frames(count: 1000, size: 4097, seed: 3)
                var before = try pool.remainingCapacity
                #expect(before == 64 << 20)
                var result = try FS.capture(pool, odd, to: out + "/odd.mov")
                #expect(result.path == out + "/odd.mov")
                #expect(result.length == 4_097_000)
                #expect(try TestSupport.statSizes(out + "/odd.mov").size == 4_097_000)
                #expect(TestSupport.fileEquals(out + "/odd.mov", TestSupport.concatenated(odd)))
                #expect(try pool.remainingCapacity == before - TestSupport.roundUp(4_097_000, unit))
                #expect(try TestSupport.poolStatus(path).remainingCapacity == before - TestSupport.roundUp(4_097_000, unit))
                try FS.expectIdleAndConsistent(pool)

                // 1 byte and 0 bytes.
                for length in [1, 0] {
                    before = try pool.remainingCapacity
                    let frames = length == 0 ? [] : [[UInt8(0xA5)]]
                    let destination = out + "/tiny-\(length).mov"
                    result = try FS.capture(pool, frames, to: destination)
                    #expect(result.length == Int64(length))
                    #expect(FileManager.default.fileExists(atPath: destination))
                    #expect(TestSupport.fileHolds(destination, TestSupport.concatenated(frames)))
                    #expect(try TestSupport.statSizes(destination).size == Int64(length))
                    #expect(try pool.remainingCapacity == before - TestSupport.roundUp(Int64(length), unit))
                    try FS.expectIdleAndConsistent(pool)
                }

                // Storage full: 80 MiB of 1 MiB frames into a 64 MiB pool.
                #expect(try pool.replenish().remainingCapacity == 64 << 20)
                let big = TestSupport.frames(count: 80, size: 1 << 20, seed: 9)
                let capture = try pool.startCapture(to: out + "/full.mov", options: FS.options)
                var accepted: [[UInt8]] = []
                var full = 0
                for frame in big {
                    do {
                        try capture.append(frame)
                        accepted.append(frame)
                    } catch let error as ProVideoError {
                        #expect(error.code == .storageFull, "\(error)")
                        full += 1
                    }
                }
                #expect(accepted.count == 64)
                #expect(full == 16)
                result = try capture.finish()
                #expect(result.length == 64 << 20)
                #expect(try TestSupport.statSizes(out + "/full.mov").size == 64 << 20)
                #expect(TestSupport.fileEquals(out + "/full.mov", TestSupport.concatenated(accepted)))
                #expect(try pool.remainingCapacity == 0)
                try FS.expectIdleAndConsistent(pool)
            }
        }

        /// F7: a destination on another filesystem (tmpfs) is copied, identical, and the pool's
        /// reserve comes back whole.
        @Test(arguments: FS.types)
        func tmpfsDestinationIsCopied(type: String) throws {
            try LoopFilesystem.with(type) { fs in
                try LoopFilesystem.with("tmpfs", megabytes: 64) { tmp in
                    let path = fs.mountPoint + "/pool"
                    let pool = try Pool.create(at: path, capacity: 32 << 20, measuringBandwidth: false)
                    defer { FS.destroyQuietly(path) }
                    let frames = TestSupport.frames(count: 23, size: 1_000_003, seed: 7)
                    let input = TestSupport.concatenated(frames)
                    let destination = tmp.mountPoint + "/take.mov"
                    let result = try FS.capture(pool, frames, to: destination)
                    #expect(result.path == destination)
                    #expect(result.length == Int64(input.count))
                    #expect(try TestSupport.sha256sum(destination) == TestSupport.sha256Hex(input))
                    #expect(TestSupport.fileEquals(destination, input))
                    #expect(try FileManager.default.contentsOfDirectory(atPath: tmp.mountPoint) == ["take.mov"],
                            "no temporary file may stay beside the destination")
                    // Copied out: the pool's file went back to the reserve whole.
                    #expect(try pool.remainingCapacity == 32 << 20)
                    let status = try TestSupport.poolStatus(path)
                    #expect(status.remainingCapacity == 32 << 20)
                    try FS.expectReserveMatchesStat(path, status)
                    try FS.expectIdleAndConsistent(pool)
                }
            }
        }

        /// F8: a destination that appears while recording is never overwritten; the recording
        /// stays in the pool, listed, byte-identical. Same filesystem (rename) and tmpfs (copy).
        @Test(arguments: FS.types, [false, true])
        func existingDestinationIsNeverOverwritten(type: String, onTmpfs: Bool) throws {
            try LoopFilesystem.with(type) { fs in
                try LoopFilesystem.with("tmpfs", megabytes: 32) { tmp in
                    let path = fs.mountPoint + "/pool"
                    let pool = try Pool.create(at: path, capacity: 32 << 20, measuringBandwidth: false)
                    defer {
                        try? FileManager.default.removeItem(atPath: path + "/recordings")
                        FS.destroyQuietly(path)
                    }
                    let directory = onTmpfs ? tmp.mountPoint : fs.mountPoint + "/out"
                    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                    let destination = directory + "/take.mov"
                    let existing = Array("an earlier take, not to be touched\n".utf8)

                    // Taken at the start: refused up front.
                    try Data(existing).write(to: URL(fileURLWithPath: destination))
                    let early = #expect(throws: ProVideoError.self) { try pool.startCapture(to: destination, options: FS.options) }
                    #expect(early?.code == .destinationExists)
                    #expect(try pool.busyReasons.isEmpty)
                    try FileManager.default.removeItem(atPath: destination)

                    // Taken while recording.
                    let frames = TestSupport.frames(count: 5, size: 700_001, seed: 5)
                    let input = TestSupport.concatenated(frames)
                    let capture = try pool.startCapture(to: destination, options: FS.options)
                    for frame in frames { try capture.append(frame) }
                    try Data(existing).write(to: URL(fileURLWithPath: destination))
                    let error = #expect(throws: ProVideoError.self) { try capture.finish() }
                    #expect(error?.code == .destinationExists, "\(String(describing: error))")
                    #expect(TestSupport.fileHolds(destination, existing), "the existing file was changed")
                    #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["take.mov"],
                            "no partial file may stay beside the destination")

                    let listing = try TestSupport.poolListing(path)
                    #expect(listing.captures.isEmpty)
                    #expect(listing.recordings.count == 1)
                    if let held = listing.recordings.first {
                        #expect(held.destination == destination)
                        #expect(held.length == Int64(input.count))
                        #expect(held.path == error?.path)
                        #expect(TestSupport.fileEquals(held.path, input), "the kept recording differs from the input")
                    }
                    #expect(try pool.busyReasons.isEmpty)
                    #expect(!TestSupport.hasCapture(path))
                    // The pool is usable again.
                    let next = try FS.capture(pool, [[1, 2, 3]], to: directory + "/next.mov")
                    #expect(TestSupport.fileHolds(next.path, [1, 2, 3]))
                }
            }
        }
    }
}

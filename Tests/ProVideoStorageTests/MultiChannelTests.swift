import Foundation
import Glibc
import TestSupport
import Testing
@testable import ProVideoStorage

/// Several captures at once in one pool, from one process: every file exact, the pool's
/// accounting the sum of the recordings, and a full pool shared to its last grant.
@Suite struct MultiChannelTests {
    static let options = CaptureOptions(bitrate: 40_000_000, bufferBudget: 2 << 20, writeSize: 256 << 10,
                                        durabilityInterval: 200_000_000, grantSize: 1 << 20)

    /// Eight captures on one `Pool`, their frames interleaved one by one (an ISO recorder's
    /// loop): each file is byte-identical to its frames, the remaining capacity falls by the
    /// eight lengths rounded to the allocation unit, and `check` passes. 80 MiB: the frames'
    /// 32.4 MiB and what the design lets the others strand in their leads (about 32 MiB with
    /// quick grants, more once a grant was slow: `GrantLeadTests`); on 64 MiB the loop-mounted
    /// ext4 case ended `storageFull` one frame short beside `stress-ng --cpu 0`.
    @Test func eightCapturesFromOneProcess() throws {
        try TestSupport.withScratch("eight-captures") { scratch in
            let pool = try Pool.create(at: scratch + "/pool", capacity: 80 << 20, measuringBandwidth: false)
            defer { try? pool.destroy() }
            try Self.recordInterleaved(pool, count: 8, into: scratch)
        }
    }

    /// The same on loop-mounted ext4, XFS and btrfs (root).
    @Test(.enabled(if: TestSupport.isRoot, "needs root: loop devices and mounts"), arguments: FS.types)
    func eightCapturesOnEachFilesystem(type: String) throws {
        try LoopFilesystem.with(type) { fs in
            let pool = try Pool.create(at: fs.mountPoint + "/pool", capacity: 80 << 20, measuringBandwidth: false)
            defer { try? pool.destroy() }
            try Self.recordInterleaved(pool, count: 8, into: fs.mountPoint)
        }
    }

    static func recordInterleaved(_ pool: Pool, count: Int, into directory: String) throws {
        let before = try pool.remainingCapacity
        let unit = Int64(max(pool.directIOAlignment.io, pool.configuration.storage.blockSize))
        let streams = (0..<count).map { index in
            TestSupport.frames(count: 40 + index * 7, size: 50_000 + index * 4_099, seed: UInt64(index + 1))
        }
        let captures = try (0..<count).map { try pool.startCapture(to: directory + "/iso-\($0).mov", options: options) }
        #expect(try pool.status().captures.count == count)
        #expect(try pool.busyReasons == [.capturing])
        for frame in 0..<streams.map(\.count).max()! {
            for (index, capture) in captures.enumerated() where frame < streams[index].count {
                try capture.append(streams[index][frame])
            }
        }
        var total: Int64 = 0
        for (index, capture) in captures.enumerated() {
            let result = try capture.finish()
            let expected = TestSupport.concatenated(streams[index])
            #expect(result.length == Int64(expected.count))
            let exact = TestSupport.fileEquals(directory + "/iso-\(index).mov", expected)
            #expect(exact, "iso-\(index).mov differs from its frames")
            total += TestSupport.roundUp(result.length, unit)
        }
        let after = try pool.remainingCapacity
        #expect(after == before - total, "remaining \(after), before \(before), recorded \(total) (unit \(unit))")
        #expect(try pool.check() == [])
        #expect(try pool.busyReasons.isEmpty)
    }

    /// Three captures write round-robin into a 24 MiB pool until each is refused with storage
    /// full. The first refusal comes only once the reserve is empty, with each other capture
    /// holding less than three grants it has not written (the documented stranded space); every
    /// capture then writes what it holds, so together they fill the pool to within three
    /// frames; each file is exact and `check` passes.
    @Test func threeCapturesFillThePool() throws {
        try TestSupport.withScratch("three-fill") { scratch in
            let pool = try Pool.create(at: scratch + "/pool", capacity: 24 << 20, measuringBandwidth: false)
            defer { try? pool.destroy() }
            try Self.fill(pool, into: scratch)
        }
    }

    @Test(.enabled(if: TestSupport.isRoot, "needs root: loop devices and mounts"), arguments: FS.types)
    func threeCapturesFillThePoolOnEachFilesystem(type: String) throws {
        try LoopFilesystem.with(type) { fs in
            let pool = try Pool.create(at: fs.mountPoint + "/pool", capacity: 24 << 20, measuringBandwidth: false)
            defer { try? pool.destroy() }
            try Self.fill(pool, into: fs.mountPoint)
        }
    }

    static func fill(_ pool: Pool, into directory: String) throws {
        let capacity = try pool.remainingCapacity
        let frameSize = 100_000
        let captures = try (0..<3).map { try pool.startCapture(to: directory + "/fill-\($0).mov", options: options) }
        var written: [[[UInt8]]] = [[], [], []]
        var full = [false, false, false]
        var firstRefusalChecked = false
        var frame = 0
        while full.contains(false) {
            for (index, capture) in captures.enumerated() where !full[index] {
                let bytes = TestSupport.pattern(frameSize, seed: UInt64(index * 100_000 + frame))
                do {
                    try capture.append(bytes)
                    written[index].append(bytes)
                } catch let error as ProVideoError where error.code == .storageFull {
                    full[index] = true
                    if !firstRefusalChecked {
                        firstRefusalChecked = true
                        let reserve = try pool.reserve(pool.layout.reserve).size()
                        #expect(reserve == 0, "storage full with \(reserve) bytes in the reserve")
                        for (other, running) in captures.enumerated() where other != index {
                            let unwritten = running.granter.grantedBytes - running.length
                            #expect(unwritten < 3 * (1 << 20) + Int64(frameSize),
                                    "capture \(other) holds \(unwritten) unwritten bytes, three grants or more")
                        }
                    }
                }
            }
            frame += 1
            #expect(frame < 1000, "the pool never filled")
            if frame >= 1000 { break }
        }
        let accepted = written.reduce(0) { $0 + $1.reduce(0) { $0 + $1.count } }
        #expect(Int64(accepted) > capacity - 3 * Int64(frameSize), "\(accepted) of \(capacity) bytes accepted")
        for (index, capture) in captures.enumerated() {
            _ = try capture.finish()
            let exact = TestSupport.fileEquals(directory + "/fill-\(index).mov", TestSupport.concatenated(written[index]))
            #expect(exact, "fill-\(index).mov differs from what was accepted")
        }
        #expect(try pool.check() == [])
    }
}

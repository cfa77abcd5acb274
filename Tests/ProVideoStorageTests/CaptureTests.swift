import Foundation
import Synchronization
import TestSupport
import Testing
@testable import ProVideoStorage

/// Small buffers so tests allocate little; the engine logic is the same at any size. The disk
/// here is shared and can stall for seconds, so appends wait long before an overrun.
let testOptions = CaptureOptions(bitrate: 100_000_000, bufferBudget: 4 << 20, writeSize: 512 << 10,
                                 durabilityInterval: 50_000_000, overrunPolicy: .wait(nanoseconds: 30_000_000_000))

/// A pool in a scratch directory on the root filesystem (ext4 here), removed afterwards.
func withPool<T>(capacity: Int64 = 32 << 20, calls: SystemCalls = .live, _ name: String = #function,
                 _ body: (Pool, String) throws -> T) throws -> T {
    try TestSupport.kernelSettings.reading {
        try TestSupport.withScratch(name) { scratch in
            let pool = try Pool.create(at: scratch + "/pool", capacity: capacity, systemCalls: calls)
            return try body(pool, scratch)
        }
    }
}

/// Records `bytes` to `destination` on another filesystem with `.background` landing: the take
/// stays in the pool, waiting to land. Returns its path in the pool.
func recordWaitingToLand(_ pool: Pool, to destination: String, _ bytes: [UInt8]) throws -> String {
    var options = testOptions
    options.landing = .background
    let capture = try pool.startCapture(to: destination, options: options)
    try capture.append(bytes)
    _ = try capture.finish()
    return try #require(try pool.landings().first { $0.destination == destination }).path
}

@Suite struct CaptureTests {
    @Test func oddFramesGiveAnExactFile() throws {
        try withPool { (pool, scratch) throws in
            let frames = (0..<1000).map { TestSupport.pattern(4097, seed: UInt64($0)) }
            let capture = try pool.startCapture(to: scratch + "/take.mov", options: testOptions)
            for frame in frames { try capture.append(frame) }
            let result = try capture.finish()
            #expect(result.path == scratch + "/take.mov")
            #expect(result.length == 4_097_000)
            #expect(TestSupport.fileHolds(result.path, frames.flatMap { $0 }))
            #expect(result.statistics.frames == 1000)
        }
    }

    /// In-place frames: pieces in order, exactly the frame's bytes, across buffer boundaries and
    /// for a frame larger than all buffers (5 MiB against 4 MiB of buffers).
    @Test func framesWrittenInPlaceGiveAnExactFile() throws {
        try withPool { (pool, scratch) throws in
            let sizes = [1, 700_001, 524_288, 5 << 20, 3, 1_048_577]
            let expected = TestSupport.pattern(sizes.reduce(0, +), seed: 11)
            let capture = try pool.startCapture(to: scratch + "/inplace.mov", options: testOptions)
            var offset = 0
            var piecesPerFrame: [Int] = []
            for size in sizes {
                var pieces = 0, filled = 0
                try capture.append(count: size) { piece in
                    piece.copyBytes(from: expected[offset + filled..<offset + filled + piece.count])
                    filled += piece.count
                    pieces += 1
                }
                #expect(filled == size)
                offset += size
                piecesPerFrame.append(pieces)
            }
            // 512 KiB buffers: the second frame spans two, the 5 MiB one eleven.
            #expect(piecesPerFrame == [1, 2, 2, 11, 1, 3])
            let result = try capture.finish()
            #expect(result.length == Int64(expected.count))
            #expect(result.statistics.frames == sizes.count)
            #expect(TestSupport.fileHolds(result.path, expected))
        }
    }

    @Test func aRefusedInPlaceFrameIsNeverFilled() throws {
        try withPool { (pool, scratch) throws in
            let capture = try pool.startCapture(to: scratch + "/refused.mov", options: testOptions)
            var calls = 0
            #expect(throws: ProVideoError.self) { try capture.append(count: 33 << 20) { _ in calls += 1 } }
            #expect(throws: ProVideoError.self) { try capture.append(count: -1) { _ in calls += 1 } }
            #expect(calls == 0)
            try capture.cancel()
            #expect(try pool.remainingCapacity == pool.initialCapacity)
        }
    }

    @Test(arguments: [0, 1])
    func tinyRecordingsAreExact(size: Int) throws {
        try withPool { (pool, scratch) throws in
            let before = try pool.remainingCapacity
            let capture = try pool.startCapture(to: scratch + "/tiny", options: testOptions)
            let bytes = TestSupport.pattern(size, seed: 7)
            if size > 0 { try capture.append(bytes) }
            let result = try capture.finish()
            #expect(TestSupport.fileHolds(result.path, bytes))
            #expect(try FileManager.default.attributesOfItem(atPath: result.path)[.size] as? Int == size)
            let unit = Int64(pool.configuration.storage.blockSize)
            #expect(try pool.remainingCapacity == before - (Int64(size) + unit - 1) / unit * unit)
            #expect(try pool.busyReasons.isEmpty)
        }
    }

    /// Field case F9: the frame that crosses the end fails; finish keeps what was accepted.
    @Test func storageFullKeepsAcceptedBytes() throws {
        try withPool(capacity: 64 << 20) { (pool, scratch) throws in
            let capture = try pool.startCapture(to: scratch + "/full.mov", options: testOptions)
            var accepted: [UInt8] = []
            var failure: ProVideoError?
            for index in 0..<80 {
                let frame = TestSupport.pattern(1 << 20, seed: UInt64(index))
                do {
                    try capture.append(frame)
                    accepted += frame
                } catch let error as ProVideoError {
                    failure = error
                    break
                }
            }
            #expect(failure?.code == .storageFull)
            #expect(accepted.count == 64 << 20)
            let result = try capture.finish()
            #expect(result.length == 64 << 20)
            #expect(TestSupport.fileHolds(result.path, accepted))
            #expect(try pool.remainingCapacity == 0)
        }
    }

    @Test func patchesRewriteEarlierBytes() throws {
        try withPool { (pool, scratch) throws in
            var expected = TestSupport.pattern(3 << 20 + 123, seed: 3)
            let capture = try pool.startCapture(to: scratch + "/patched.mov", options: testOptions)
            for start in stride(from: 0, to: expected.count, by: 100_001) {
                try capture.append(Array(expected[start..<min(start + 100_001, expected.count)]))
            }
            // On disk, straddling two blocks; straddling disk and the filling buffer; in the buffer.
            let patches: [(Int, Int)] = [(5, 8), (511, 3), (1_048_570, 20), (3 << 20 - 10, 40), (expected.count - 4, 4)]
            for (index, (offset, count)) in patches.enumerated() {
                let bytes = [UInt8](repeating: UInt8(0xA0 + index), count: count)
                try bytes.withUnsafeBytes { try capture.patch($0, at: Int64(offset)) }
                expected.replaceSubrange(offset..<offset + count, with: bytes)
            }
            let outside = [UInt8](repeating: 1, count: 2)
            #expect(throws: ProVideoError.self) {
                try outside.withUnsafeBytes { try capture.patch($0, at: Int64(expected.count - 1)) }
            }
            let result = try capture.finish()
            #expect(result.statistics.patches == 5)
            #expect(TestSupport.fileHolds(result.path, expected))
        }
    }

    /// A slow stream never fills a buffer between commits: the commit writes the filling
    /// buffer's frames, so they are durable within the durability interval anyway.
    @Test func slowStreamFramesBecomeDurable() throws {
        try withPool { (pool, scratch) throws in
            let capture = try pool.startCapture(to: scratch + "/slow.mov", options: testOptions)
            let frames = (0..<5).map { TestSupport.pattern(10_001, seed: UInt64($0)) }
            for frame in frames { try capture.append(frame) }
            usleep(100_000)
            for _ in 0..<100 where capture.committedLength < 50_005 {
                try capture.poll()
                usleep(10_000)
            }
            #expect(capture.committedLength == 50_005)
            #expect(CaptureJournal.readCommitted(capture.files.commit) == 50_005)
            // No whole buffer landed yet: polls publish the length within `progressInterval`.
            for _ in 0..<100 where try (CaptureJournal.readWritten(capture.files.progress) ?? 0) < 50_005 {
                try capture.poll()
                usleep(10_000)
            }
            #expect(try CaptureJournal.readWritten(capture.files.progress) == 50_005)
            #expect(try pool.remainingCapacity == pool.initialCapacity - pool.reserve("").rounded(50_005))
            try capture.append(TestSupport.pattern(600_000, seed: 9))  // fills and writes the buffer whole
            let result = try capture.finish()
            #expect(TestSupport.fileHolds(result.path, frames.flatMap { $0 } + TestSupport.pattern(600_000, seed: 9)))
        }
    }

    @Test func cancelReturnsTheCapacity() throws {
        try withPool { (pool, scratch) throws in
            let before = try pool.remainingCapacity
            let capture = try pool.startCapture(to: scratch + "/discarded.mov", options: testOptions)
            try capture.append(TestSupport.pattern(5 << 20, seed: 1))
            try capture.cancel()
            #expect(try pool.remainingCapacity == before)
            #expect(!FileManager.default.fileExists(atPath: scratch + "/discarded.mov"))
            #expect(try pool.busyReasons.isEmpty)
            #expect(throws: ProVideoError.self) { try capture.append([1]) }
        }
    }

    /// While captures run, a second capture starts beside them (the default), resize and
    /// destroy are refused with `capturing`, and replenish proceeds.
    /// One destination per take, in one process (issue 25, item 7): a start to the destination
    /// of a running capture, or of a take waiting to land, is refused with `.busy` naming it;
    /// once the first finishes, the name is free again.
    @Test func aTakensDestinationIsRefused() throws {
        try withPool { (pool, scratch) throws in
            let other = try Pool.open(at: pool.path)
            let capture = try pool.startCapture(to: scratch + "/take.mov", options: testOptions)
            for starter in [pool, other] {
                let error = #expect(throws: ProVideoError.self) {
                    try starter.startCapture(to: scratch + "/./take.mov", options: testOptions)
                }
                #expect(error?.code == .busy)
                #expect(error?.message.contains("process \(getpid()) is already recording to it") == true, "\(error?.message ?? "")")
            }
            try capture.append([1, 2, 3])
            #expect(try capture.finish().length == 3)
            #expect(TestSupport.readFile(scratch + "/take.mov") == [1, 2, 3])
            try TestSupport.withScratchOnAnotherFilesystem { remote in
                let held = try recordWaitingToLand(pool, to: remote + "/far.mov", [4, 5])
                let error = #expect(throws: ProVideoError.self) {
                    try other.startCapture(to: remote + "/far.mov", options: testOptions)
                }
                #expect(error?.code == .busy)
                #expect(error?.message.contains("the take \(held) is waiting to land there") == true, "\(error?.message ?? "")")
                #expect(error?.remedies == [.land])
                _ = try pool.landPending()
                #expect(TestSupport.readFile(remote + "/far.mov") == [4, 5])
            }
        }
    }

    @Test func runningCapturesRefuseResizeAndDestroyOnly() throws {
        try withPool { (pool, scratch) throws in
            let other = try Pool.open(at: pool.path)
            let capture = try pool.startCapture(to: scratch + "/a.mov", options: testOptions)
            #expect(try other.busyReasons == [.capturing])
            let second = try other.startCapture(to: scratch + "/b.mov", options: testOptions)
            let attempts: [() throws -> Void] = [{ _ = try other.resize(to: 64 << 20) }, { try other.destroy() }]
            for attempt in attempts {
                let error = #expect(throws: ProVideoError.self) { try attempt() }
                #expect(error?.code == .busy)
                #expect(error?.message.contains("capturing") == true)
            }
            #expect(try other.replenish().missing == 0)
            try capture.append([1, 2, 3])
            try second.append([4, 5])
            #expect(try capture.finish().length == 3)
            #expect(try other.busyReasons == [.capturing], "the second capture still runs")
            #expect(try second.finish().length == 2)
            #expect(try other.busyReasons.isEmpty)
            #expect(try pool.check().isEmpty)
        }
    }

    /// A pool created with `maxCaptures: 1` keeps Apple's semantics: a second capture fails
    /// with `capturing`, naming the running one.
    @Test func oneCapturePoolRefusesASecond() throws {
        try TestSupport.withScratch("one-capture") { scratch in
            let pool = try Pool.create(at: scratch + "/pool", capacity: 16 << 20, maxCaptures: 1, measuringBandwidth: false)
            defer { try? pool.destroy() }
            #expect(try pool.maxCaptures == 1)
            let capture = try pool.startCapture(to: scratch + "/a.mov", options: testOptions)
            let error = #expect(throws: ProVideoError.self) {
                _ = try Pool.open(at: pool.path).startCapture(to: scratch + "/b.mov", options: testOptions)
            }
            #expect(error?.code == .busy)
            #expect(error?.message.contains("capturing") == true)
            #expect(error?.message.contains(scratch + "/a.mov") == true)
            try capture.cancel()
            let next = try pool.startCapture(to: scratch + "/b.mov", options: testOptions)
            try next.cancel()
        }
    }

    @Test func destinationIsCheckedAtStart() throws {
        try withPool { (pool, scratch) throws in
            #expect(FileManager.default.createFile(atPath: scratch + "/exists.mov", contents: Data([42])))
            let cases: [(String, ProVideoError.Code)] = [
                (scratch + "/missing/take.mov", .invalidDestination), (scratch + "/exists.mov", .destinationExists),
                (pool.path + "/take.mov", .invalidDestination),
            ]
            for (destination, code) in cases {
                let error = #expect(throws: ProVideoError.self) { try pool.startCapture(to: destination, options: testOptions) }
                #expect(error?.code == code)
            }
            #expect(TestSupport.fileHolds(scratch + "/exists.mov", [42]))
            #expect(try pool.busyReasons.isEmpty)
            #expect(try pool.remainingCapacity == pool.initialCapacity)
        }
    }

    /// Field case F8: a destination that appears during the capture is never overwritten; the
    /// recording stays in the pool and is listed.
    @Test func takenDestinationKeepsRecordingInPool() throws {
        try withPool { (pool, scratch) throws in
            let destination = scratch + "/take.mov"
            let capture = try pool.startCapture(to: destination, options: testOptions)
            let bytes = TestSupport.pattern(1_000_000, seed: 9)
            try capture.append(bytes)
            #expect(FileManager.default.createFile(atPath: destination, contents: Data("precious".utf8)))
            let error = #expect(throws: ProVideoError.self) { try capture.finish() }
            #expect(error?.code == .destinationExists)
            #expect(TestSupport.fileHolds(destination, Array("precious".utf8)))
            let listing = try pool.listing()
            #expect(listing.recordings.count == 1)
            #expect(listing.recordings.first?.destination == destination)
            #expect(listing.recordings.first.map { TestSupport.fileHolds($0.path, bytes) } == true)
            #expect(try pool.busyReasons.isEmpty)
        }
    }
}

extension CaptureTests {
    /// A negative bitrate is refused before anything is made: admitted, it lowered the sum the
    /// other captures are admitted against (issue 37, "numbers still trusted").
    @Test func aNegativeBitrateIsRefused() throws {
        try withPool { (pool, scratch) throws in
            try pool.setBandwidth(1_000_000_000)
            var options = testOptions
            options.bitrate = -400_000_000
            let error = #expect(throws: ProVideoError.self) { try pool.startCapture(to: scratch + "/take.mov", options: options) }
            #expect(error?.code == .invalidArgument)
            #expect(error?.message.contains("-400000000 bit/s") == true, "\(String(describing: error))")
            #expect(try pool.remainingCapacity == pool.initialCapacity)
            #expect(try pool.status().captures.isEmpty)
        }
    }
}

import Foundation
import Glibc
import TestSupport
import Testing
@testable import ProVideoStorage

/// The order of writes and flushes that makes each step durable, seen through the syscall
/// layer and the engine: a killed process loses nothing the kernel accepted, so only these
/// checks (and power-loss replay) notice a missing or misplaced flush.
@Suite struct DurabilityOrderTests {
    /// Every commit record, periodic or final, is queued only after an fdatasync of the data
    /// file completed successfully since the previous record.
    @Test(.timeLimit(.minutes(3)), arguments: [EngineChoice.ioUring, .pwrite])
    func commitRecordFollowsADataSync(engine: EngineChoice) throws {
        let (calls, fault) = FaultEngine.install(FaultEngine.Rules())
        try withPool(calls: calls) { pool, scratch in
            var options = testOptions
            options.engine = engine
            options.durabilityInterval = 0
            let capture = try pool.startCapture(to: scratch + "/ordered.mov", options: options)
            for index in 0..<12 {
                try capture.append(TestSupport.pattern(200_000, seed: UInt64(index)))
                for _ in 0..<20 where capture.committedLength < capture.length {
                    try capture.poll()
                    usleep(2_000)
                }
            }
            try capture.append(TestSupport.pattern(7, seed: 99))  // left for the final commit
            try capture.finish()
            var dataFile: Int32?
            var synced = false
            var records = 0
            for event in fault.current!.events {
                switch event {
                case .queued(let request, let fd):
                    switch request.tag {
                    case .slotWrite, .flush: dataFile = dataFile ?? fd
                    default: break
                    }
                    if request.tag == .commitRecord {
                        #expect(synced, "commit record \(records + 1) was queued without a data sync before it")
                        synced = false
                        records += 1
                    }
                case .delivered(let request, let fd, let result):
                    if request.tag == .dataSync && result == 0 && fd == dataFile { synced = true }
                }
            }
            #expect(records >= 3)
        }
    }

    /// A data sync that fails (EIO, or ENOSPC, which a write would retry) fails the capture,
    /// and no commit record vouches for the bytes it was to make durable: the record on disk
    /// stays at the last good commit. A failed fdatasync is never made again into a commit
    /// (issue 25, "fsyncgate": the kernel may have dropped the pages it failed to write).
    @Test(.timeLimit(.minutes(3)), arguments: [EngineChoice.ioUring, .pwrite], [EIO, ENOSPC])
    func failedDataSyncCommitsNothingMore(engine: EngineChoice, errno: Int32) throws {
        var rules = FaultEngine.Rules()
        rules.result = { request, result in request.tag == .dataSync && request.ordinal == 2 ? -errno : result }
        let (calls, fault) = FaultEngine.install(rules)
        try withPool(calls: calls) { pool, scratch in
            var options = testOptions
            options.engine = engine
            options.durabilityInterval = 0
            var capture: Capture? = try pool.startCapture(to: scratch + "/unsynced.mov", options: options)
            var failure: ProVideoError?
            var committedBefore: Int64 = 0
            for index in 0..<200 where failure == nil {
                do {
                    committedBefore = capture!.committedLength
                    try capture!.append(TestSupport.pattern(100_000, seed: UInt64(index)))
                    try capture!.poll()
                    usleep(5_000)
                } catch let error as ProVideoError {
                    failure = error
                }
            }
            #expect(failure?.errno == errno)
            #expect(failure?.systemCall == "fdatasync")
            #expect(failure?.location?.hasPrefix("ProVideoWritePath/CommitPipeline.swift:") == true, "\(String(describing: failure?.location))")
            #expect(committedBefore > 0)
            #expect(capture!.committedLength == committedBefore)
            #expect(CaptureJournal.readCommitted(capture!.files.commit) == committedBefore)
            let records = fault.current!.events.filter {
                if case .queued(let request, _) = $0 { return request.tag == .commitRecord }
                return false
            }
            #expect(records.count == 1)  // the first commit's only
            capture = nil
            _ = try Pool.open(at: pool.path)
        }
    }

    /// System calls that log the steps of a finish: fdatasync and fsync with the path they
    /// flush, renames; at each directory flush, whether the journal already records the
    /// placement (it must not: the journal records a step only once it is durable).
    static func logging(into log: Shared<[String]>, pool: String, forceCopy: Bool) -> SystemCalls {
        var calls = SystemCalls.live
        calls.fdatasync = { fd in
            log.update { $0.append("fdatasync \(TestSupport.path(of: fd))") }
            return SystemCalls.live.fdatasync(fd)
        }
        calls.fsync = { fd in
            let placed = (try? CaptureJournal.load(TestSupport.onlyCapture(pool) + "/capture.json"))?.placedAt != nil
            log.update { $0.append("fsync \(TestSupport.path(of: fd))\(placed ? " (journal already placed)" : "")") }
            return SystemCalls.live.fsync(fd)
        }
        calls.renameNoReplace = { rawFrom, rawTo in
            let (from, to) = (TestSupport.resolved(rawFrom), TestSupport.resolved(rawTo))
            if forceCopy && TestSupport.isCaptureData(from) { return -EXDEV }
            log.update { $0.append("rename \(from) -> \(to)") }
            return SystemCalls.live.renameNoReplace(rawFrom, rawTo)
        }
        return calls
    }

    /// Same filesystem: data flushed, then the rename to the destination, then the
    /// destination's directory flushed, and only then the journal step that records it.
    /// Across filesystems (EXDEV forced): the copy flushed, verified, renamed into place, and
    /// the directory flushed before the journal records it.
    @Test(arguments: [false, true])
    func publishedRecordingIsFlushedBeforeTheJournalMovesOn(copy: Bool) throws {
        try TestSupport.withScratch("durability-order-\(copy)") { scratch in
            let log = Shared<[String]>([])
            let path = scratch + "/pool"
            let calls = Self.logging(into: log, pool: path, forceCopy: copy)
            let pool = try Pool.create(at: path, capacity: 32 << 20, systemCalls: calls)
            defer { try? pool.destroy() }
            let destination = scratch + "/take.mov"
            let capture = try pool.startCapture(to: destination, options: testOptions)
            let frames = (0..<5).map { TestSupport.pattern(300_001, seed: UInt64($0)) }
            for frame in frames { try capture.append(frame) }
            log.update { $0.removeAll() }
            let result = try capture.finish()
            #expect(result.path == destination)
            #expect(TestSupport.fileHolds(destination, frames.flatMap { $0 }))
            let steps = log.current
            let published = try #require(steps.firstIndex { $0.hasPrefix("rename ") && $0.hasSuffix("-> \(destination)") },
                                         "no rename to the destination in \(steps)")
            let flushed = steps[published...].firstIndex { $0 == "fsync \(scratch)" || $0.hasPrefix("fsync \(scratch) ") }
            #expect(flushed != nil, "the destination's directory was not flushed after the rename: \(steps)")
            if let flushed { #expect(!steps[flushed].contains("journal already placed"), "\(steps)") }
            if copy {
                let temporary = String(steps[published].dropFirst("rename ".count).prefix { $0 != " " })
                #expect(steps[..<published].contains("fsync \(temporary)"), "the copy was not flushed before its rename: \(steps)")
            } else {
                #expect(steps[..<published].contains("fdatasync \(capture.files.data)"),
                        "the data was not flushed before the rename: \(steps)")
            }
        }
    }

    /// A take kept in the pool (its destination appeared while recording) is renamed into
    /// `recordings/`, and that directory is flushed after the rename, before the journal
    /// records the placement: otherwise a power cut could lose the take's only name.
    @Test func aTakeKeptInThePoolIsFlushedBeforeTheJournalMovesOn() throws {
        try TestSupport.withScratch("durability-kept") { scratch in
            let log = Shared<[String]>([])
            let path = scratch + "/pool"
            var calls = Self.logging(into: log, pool: path, forceCopy: false)
            let logged = calls.fsync
            calls.fsync = { fd in
                // Whether the kept take is in `recordings/` yet when that directory is flushed.
                if TestSupport.path(of: fd) == path + "/recordings" {
                    let names = (try? FileManager.default.contentsOfDirectory(atPath: path + "/recordings")) ?? []
                    let kept = names.contains { !$0.hasSuffix(".json") && !$0.hasSuffix(".tmp") }
                    log.update { $0.append("recordings holds the take: \(kept)") }
                }
                return logged(fd)
            }
            let pool = try Pool.create(at: path, capacity: 32 << 20, systemCalls: calls)
            defer { try? pool.destroy() }
            let destination = scratch + "/take.mov"
            let capture = try pool.startCapture(to: destination, options: testOptions)
            try capture.append(TestSupport.pattern(300_001, seed: 1))
            try Data([9]).write(to: URL(fileURLWithPath: destination))
            log.update { $0.removeAll() }
            let error = #expect(throws: ProVideoError.self) { try capture.finish() }
            #expect(error?.code == .destinationExists)
            let steps = log.current
            let flushedWithTake = steps.firstIndex { $0 == "recordings holds the take: true" }
            #expect(flushedWithTake != nil, "recordings/ was not flushed once the take was in it: \(steps)")
            if let flushedWithTake {
                #expect(steps[(flushedWithTake + 1)...].first { $0.hasPrefix("fsync ") }?.contains("journal already placed") != true,
                        "\(steps)")
            }
            #expect(try pool.listing().recordings.map(\.length) == [300_001])
        }
    }

    /// The rename to the destination succeeded and the directory flush after it failed (EIO):
    /// `finish` says the take is placed and its name not yet durable, and the take is at its
    /// destination, whole, not looked for in the pool (issue 25, item 8: it reported ENOENT).
    @Test func aFailedFlushAfterTheRenameReportsThePlacement() throws {
        try TestSupport.withScratch("durability-unflushed") { scratch in
            let failing = Shared<Bool>(false)
            var calls = SystemCalls.live
            calls.fsync = { fd in
                if failing.current && TestSupport.path(of: fd) == scratch {
                    failing.update { $0 = false }
                    return -EIO
                }
                return SystemCalls.live.fsync(fd)
            }
            let pool = try Pool.create(at: scratch + "/pool", capacity: 32 << 20, systemCalls: calls)
            defer { try? pool.destroy() }
            let destination = scratch + "/take.mov"
            let capture = try pool.startCapture(to: destination, options: testOptions)
            let frame = TestSupport.pattern(300_001, seed: 2)
            try capture.append(frame)
            failing.update { $0 = true }
            let error = #expect(throws: ProVideoError.self) { try capture.finish() }
            #expect(error?.code == .ioError)
            #expect(error?.errno == EIO)
            #expect(error?.message.hasPrefix("placed at \(destination), but the directory could not be flushed") == true,
                    "\(error?.message ?? "")")
            let placed = TestSupport.fileHolds(destination, frame)
            #expect(placed, "destination does not hold the expected bytes")
            #expect(try pool.listing().recordings.isEmpty)
            #expect(try pool.check().isEmpty)
        }
    }

    /// System calls that send every capture's file to its destination by copy (EXDEV).
    static var forcingCopies: SystemCalls {
        var calls = SystemCalls.live
        calls.renameNoReplace = { rawFrom, rawTo in
            TestSupport.isCaptureData(TestSupport.resolved(rawFrom)) ? -EXDEV : SystemCalls.live.renameNoReplace(rawFrom, rawTo)
        }
        return calls
    }

    /// Pages of `fd`'s first `length` bytes in the page cache (mincore(2) on a mapping).
    static func residentPages(_ fd: Int32, length: Int) -> Int {
        guard length > 0, let map = mmap(nil, length, PROT_READ, MAP_SHARED, fd, 0), map != MAP_FAILED else { return -1 }
        defer { munmap(map, length) }
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        var vector = [UInt8](repeating: 0, count: (length + pageSize - 1) / pageSize)
        guard mincore(map, length, &vector) == 0 else { return -1 }
        return vector.filter { $0 & 1 == 1 }.count
    }

    /// The finish-time copy is verified against what the device returns (issue 25, item 9):
    /// when the verification first reads the copy, none of its pages are in the page cache
    /// (they were dropped after its fsync), as landing does.
    @Test func aCopyIsVerifiedFromTheDevice() throws {
        try TestSupport.withScratch("durability-verify-device") { scratch in
            let seen = Shared<[Int]>([])
            var calls = Self.forcingCopies
            calls.pread = { fd, buffer, count, offset in
                if offset == 0, TestSupport.path(of: fd).contains(".provideo-") {
                    seen.update { $0.append(Self.residentPages(fd, length: 1 << 20)) }
                }
                return SystemCalls.live.pread(fd, buffer, count, offset)
            }
            let pool = try Pool.create(at: scratch + "/pool", capacity: 32 << 20, systemCalls: calls)
            defer { try? pool.destroy() }
            let capture = try pool.startCapture(to: scratch + "/take.mov", options: testOptions)
            let frame = TestSupport.pattern(2 << 20, seed: 3)
            try capture.append(frame)
            #expect(try capture.finish().path == scratch + "/take.mov")
            let copied = TestSupport.fileHolds(scratch + "/take.mov", frame)
            #expect(copied, "scratch + /take.mov does not hold the expected bytes")
            #expect(seen.current.first == 0, "pages of the copy in the page cache at its verification: \(seen.current)")
        }
    }

    /// A file of the take's length but other bytes already at a destination on another
    /// filesystem is not taken for the take's copy: it stays as it is, and the take is kept
    /// in the pool, whole (the digests are compared, not only the lengths).
    @Test func aForeignFileOfTheSameLengthIsNotTheCopy() throws {
        try TestSupport.withScratch("durability-foreign-copy") { scratch in
            let pool = try Pool.create(at: scratch + "/pool", capacity: 32 << 20, systemCalls: Self.forcingCopies)
            defer { try? pool.destroy() }
            let destination = scratch + "/take.mov"
            let capture = try pool.startCapture(to: destination, options: testOptions)
            let frame = TestSupport.pattern(300_001, seed: 4), foreign = TestSupport.pattern(300_001, seed: 5)
            try capture.append(frame)
            try Data(foreign).write(to: URL(fileURLWithPath: destination))
            let error = #expect(throws: ProVideoError.self) { try capture.finish() }
            #expect(error?.code == .destinationExists)
            let foreignKept = TestSupport.fileHolds(destination, foreign)
            #expect(foreignKept, "destination does not hold the expected bytes")
            let kept = try #require(try pool.listing().recordings.first, "the take is not kept in the pool")
            let takeKept = TestSupport.fileHolds(kept.path, frame)
            #expect(takeKept, "kept.path does not hold the expected bytes")
        }
    }

    /// A copy that reports success but differs from the recording (a byte flipped after
    /// copy_file_range) is caught by the SHA-256 check: nothing is published, and the
    /// recording stays in the pool, whole.
    @Test func corruptedCopyIsNeverPublished() throws {
        try TestSupport.withScratch("durability-corrupt") { scratch in
            var calls = SystemCalls.live
            calls.renameNoReplace = { rawFrom, rawTo in
            let from = TestSupport.resolved(rawFrom)
                return TestSupport.isCaptureData(from) ? -EXDEV : SystemCalls.live.renameNoReplace(rawFrom, rawTo)
            }
            calls.copyFileRange = { fdIn, offsetIn, fdOut, offsetOut, length in
                let n = SystemCalls.live.copyFileRange(fdIn, offsetIn, fdOut, offsetOut, length)
                if n > 0 && offsetOut == 0 {
                    var flipped = [UInt8](repeating: 0, count: 1)
                    _ = pread(fdOut, &flipped, 1, 0)
                    flipped[0] ^= 0xFF
                    _ = pwrite(fdOut, flipped, 1, 0)
                }
                return n
            }
            let pool = try Pool.create(at: scratch + "/pool", capacity: 32 << 20, systemCalls: calls)
            defer { try? pool.destroy() }
            let destination = scratch + "/take.mov"
            let capture = try pool.startCapture(to: destination, options: testOptions)
            let frame = TestSupport.pattern(1_000_003, seed: 4)
            try capture.append(frame)
            let error = #expect(throws: ProVideoError.self) { try capture.finish() }
            #expect(error?.message.contains("SHA-256") == true, "\(String(describing: error))")
            #expect(!FileManager.default.fileExists(atPath: destination))
            let held = try #require(try pool.listing().recordings.first)
            #expect(TestSupport.fileHolds(held.path, frame))
            try FileSystem.remove(held.path)
            try FileSystem.remove(held.path + ".json")
        }
    }
}

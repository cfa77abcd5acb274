import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing
@testable import ProVideoStorage

/// Grants and give-backs by extent exchange on XFS made with exchange-range (issue 64), and the
/// fallback to fallocate and cut everywhere else. The exchange-capable filesystem is made by
/// Tools/xfs-exchange/make-image (`ExchangeXFS`).
@Suite(.serialized, .enabled(if: TestSupport.isRoot, "needs root: loop devices and mounts"))
struct ExtentExchangeTests {
    /// Small grants, so that one capture takes several and gives back a part written and a part not.
    static let options = CaptureOptions(bitrate: 100_000_000, bufferBudget: 4 << 20, writeSize: 512 << 10,
                                        durabilityInterval: 50_000_000, overrunPolicy: .wait(nanoseconds: 30_000_000_000),
                                        grantSize: 4 << 20)

    /// A library pool of `capacity` bytes on a fresh exchange-capable XFS.
    static func withExchangePool<T>(capacity: Int64 = 48 << 20, calls: SystemCalls = .live,
                                    _ body: (Pool, LoopFilesystem) throws -> T) throws -> T {
        try LoopFilesystem.with(ExchangeXFS.type) { fs in
            let pool = try Pool.create(at: fs.mountPoint + "/pool", capacity: capacity, systemCalls: calls)
            return try body(pool, fs)
        }
    }

    /// statfs(2) free bytes of the filesystem at `mount`, after a syncfs so that nothing is
    /// still being freed or allocated behind the figure.
    static func freeBytes(_ mount: String) throws -> Int64 {
        try TestSupport.shell("sync -f '\(mount)'")
        return try TestSupport.freeSpace(mount).free
    }

    @Test(.enabled(if: ExchangeXFS.isAvailable, "\(ExchangeXFS.unavailableReason ?? "")"))
    func theProbeFindsTheExchangeWhereTheFilesystemHasIt() throws {
        try Self.withExchangePool { pool, _ in
            #expect(pool.grantMethod == .extentExchange)
            #expect(pool.grantsNote == nil)
            #expect(try pool.status().grants == .extentExchange)
            // The probe's files had no names; opening probes again and finds the same.
            let names = try FileManager.default.contentsOfDirectory(atPath: pool.path).sorted()
            #expect(names == ["pool.json", "pool.lock", "reserve", "spare"], "\(names)")
            #expect(try Pool.open(at: pool.path).grantMethod == .extentExchange)
        }
    }

    /// XFS made without the feature (Debian 12's mkfs.xfs) refuses the probe and says so; ext4
    /// is not probed and has nothing to say.
    @Test(arguments: ["xfs", "ext4"])
    func elsewhereGrantsFallocateAndCut(type: String) throws {
        try LoopFilesystem.with(type) { fs in
            let pool = try Pool.create(at: fs.mountPoint + "/pool", capacity: 32 << 20)
            #expect(pool.grantMethod == .fallocateAndCut)
            if type == "xfs" {
                #expect(pool.grantsNote?.contains("refused the probe's extent exchange") == true, "\(pool.grantsNote ?? "nil")")
            } else {
                #expect(pool.grantsNote == nil)
            }
            let capture = try pool.startCapture(to: fs.mountPoint + "/take-\(type).mov", options: Self.options)
            try capture.append(TestSupport.pattern(1 << 20, seed: 3))
            let result = try capture.finish()
            #expect(TestSupport.fileHolds(result.path, TestSupport.pattern(1 << 20, seed: 3)))
            #expect(try pool.remainingCapacity == 32 << 20 - (1 << 20))
        }
    }

    /// The "Done when" of issue 64: a grant and a give-back move blocks between the reserve and
    /// the capture's file without changing the filesystem's free space by one byte, and without
    /// one fallocate (a fallocate and a cut also end even once synced, but free and allocate).
    @Test(.enabled(if: ExchangeXFS.isAvailable, "\(ExchangeXFS.unavailableReason ?? "")"))
    func aGrantAndAGiveBackChangeNoFreeSpace() throws {
        let fallocates = Atomic<Int>(0), exchanges = Atomic<Int>(0)
        var calls = SystemCalls.live
        let (fallocate, exchange) = (calls.fallocate, calls.exchangeRange)
        calls.fallocate = { fd, keep, offset, length in
            fallocates.add(1, ordering: .relaxed)
            return fallocate(fd, keep, offset, length)
        }
        calls.exchangeRange = { fd, from, fromOffset, offset, length in
            exchanges.add(1, ordering: .relaxed)
            return exchange(fd, from, fromOffset, offset, length)
        }
        try Self.withExchangePool(calls: calls) { pool, fs in
            let (fallocatesBefore, exchangesBefore) = (fallocates.load(ordering: .relaxed), exchanges.load(ordering: .relaxed))
            let data = fs.mountPoint + "/pool/grant-data"
            let fd = try FileDescriptor.open(data, O_RDWR | O_CREAT | O_EXCL, mode: 0o600)
            let grants = ReserveGrants(reserve: pool.reserve(pool.layout.reserve),
                                       lock: try PoolLock(path: pool.layout.lock, access: pool.access))
            let amount: Int64 = 8 << 20
            let before = try Self.freeBytes(fs.mountPoint)
            let claimed = try grants.claim(amount, for: fd, granted: 0, sharing: false)
            #expect(claimed.bytes == amount)
            // Nothing left for a cut: the exchange cut the reserve itself.
            #expect(try grants.allocate(claimed.bytes, to: fd, granted: 0) == false)
            let granted = try Self.freeBytes(fs.mountPoint)
            #expect(granted == before, "a grant changed the free space by \(granted - before) bytes")
            #expect(try fd.extents(below: amount).mapped == amount)
            #expect(try pool.reserve(pool.layout.reserve).size() == 40 << 20)
            #expect(try pool.remainingCapacity == 40 << 20, "the grant is the file's, not lost")
            #expect(fallocates.load(ordering: .relaxed) == fallocatesBefore)
            #expect(exchanges.load(ordering: .relaxed) == exchangesBefore + 1)

            try pool.completion.giveBack(from: data, keeping: 0)
            let givenBack = try Self.freeBytes(fs.mountPoint)
            #expect(givenBack == before, "a give-back changed the free space by \(givenBack - before) bytes")
            #expect(try fd.facts().size == 0)
            let reserve = try pool.reserve(pool.layout.reserve).extents()
            #expect(reserve.mapped == 48 << 20 && reserve.end == 48 << 20, "\(reserve)")
            #expect(fallocates.load(ordering: .relaxed) == fallocatesBefore)
            #expect(exchanges.load(ordering: .relaxed) == exchangesBefore + 2)
            try FileSystem.remove(data)
            #expect(try pool.check().isEmpty)
        }
    }

    /// Written bytes never go back into the reserve: a cancelled capture that wrote part of its
    /// grant gives back its unwritten part by exchange and cuts the written part, so the next
    /// capture's granted range reads as zeros before it writes it (and the free space shows
    /// the written part was freed and allocated again, no more).
    @Test(.enabled(if: ExchangeXFS.isAvailable, "\(ExchangeXFS.unavailableReason ?? "")"))
    func aNewCaptureReadsZerosWhereAnotherWrote() throws {
        try Self.withExchangePool { pool, fs in
            let written = 6 << 20
            let first = try pool.startCapture(to: fs.mountPoint + "/first.mov", options: Self.options)
            try first.append([UInt8](repeating: 0xA5, count: written))
            try first.poll()
            // Its written bytes landed and were committed before the cancel gives them back.
            for _ in 0..<6000 where try pool.status().captures.first.map({ $0.committedBytes < Int64(written) }) ?? false {
                try first.poll()
                usleep(10_000)
            }
            #expect(try pool.status().captures.first?.committedBytes == Int64(written))
            try first.cancel()
            #expect(try pool.remainingCapacity == 48 << 20)

            let second = try pool.startCapture(to: fs.mountPoint + "/second.mov", options: Self.options)
            let dataPath = TestSupport.onlyCapture(pool.path) + "/data"
            let granted = Int(try FileSystem.facts(dataPath).size)
            #expect(granted >= written, "the test needs a first grant covering what the first capture wrote")
            let bytes = TestSupport.readPrefix(dataPath, granted)
            #expect(bytes.count == granted && bytes.allSatisfy { $0 == 0 },
                    "\(bytes.filter { $0 != 0 }.count) of \(granted) granted bytes are not zeros")
            try second.cancel()
            #expect(try pool.check().isEmpty)
        }
    }

    /// An exchange the filesystem refuses at run time (here the seam answers EOPNOTSUPP after
    /// the probe's two) falls back to fallocate and cut for every later grant, says so once, and the
    /// take and the account are exact.
    @Test(.enabled(if: ExchangeXFS.isAvailable, "\(ExchangeXFS.unavailableReason ?? "")"))
    func aRefusedExchangeFallsBackAndSaysSo() throws {
        let exchanges = Atomic<Int>(0)
        var calls = SystemCalls.live
        let live = calls.exchangeRange
        calls.exchangeRange = { fd, from, fromOffset, offset, length in
            exchanges.add(1, ordering: .relaxed).oldValue < 2 ? live(fd, from, fromOffset, offset, length) : -EOPNOTSUPP
        }
        try Self.withExchangePool(calls: calls) { pool, fs in
            #expect(pool.grantMethod == .extentExchange)
            let frames = TestSupport.pattern(10 << 20, seed: 64)
            let capture = try pool.startCapture(to: fs.mountPoint + "/refused.mov", options: Self.options)
            try capture.append(frames)
            let result = try capture.finish()
            #expect(TestSupport.fileHolds(result.path, frames))
            #expect(pool.grantMethod == .fallocateAndCut)
            let note = try #require(pool.grantsNote)
            #expect(note.contains("refused an extent exchange") && note.contains("fall back to fallocate and cut"), "\(note)")
            #expect(try pool.status().grantsNote == note)
            #expect(try pool.remainingCapacity == 48 << 20 - (10 << 20))
            #expect(try pool.check().isEmpty)
        }
    }

    /// A recorder killed between its first grant's exchange and the reserve's cut
    /// (`grant.allocated`) leaves the reserve with a hole for a tail and its file holding the
    /// blocks: `recover` cuts the hole, discards the capture, gives its blocks back by exchange,
    /// and the account is exact to the byte, the reserve whole and mapped.
    @Test(.enabled(if: ExchangeXFS.isAvailable, "\(ExchangeXFS.unavailableReason ?? "")"))
    func aGrantKilledBetweenTheExchangeAndTheCutRecoversExactly() throws {
        try LoopFilesystem.with(ExchangeXFS.type) { fs in
            let pool = fs.mountPoint + "/pool"
            try CrashKit.createPool(pool, capacity: "16M")
            defer { FS.destroyQuietly(pool) }
            let killed = try CrashKit.provideo(pool, ["record", fs.mountPoint + "/killed.mov", "--bitrate", "20M"],
                                               input: TestSupport.pattern(3 << 20, seed: 5),
                                               environment: ["PROVIDEO_CRASH_AT": "grant.allocated"])
            #expect(killed.killedBySIGKILL, "\(killed)")
            let recover = try CrashKit.provideo(pool, ["recover"])
            #expect(recover.status == 0, "\(recover)")
            let sane = try CrashKit.expectSane(pool, "grant.allocated on exchange XFS")
            #expect(sane.remainingCapacity == 16 << 20 && sane.grants == .extentExchange)
            let reserve = try FileDescriptor.open(pool + "/reserve", O_RDONLY).extents(below: 16 << 20)
            #expect(reserve.mapped == 16 << 20, "the reserve maps \(reserve.mapped) of its 16 MiB")
            #expect(!FileManager.default.fileExists(atPath: fs.mountPoint + "/killed.mov"))
        }
    }
}

/// What a give-back may exchange into the reserve: FIEMAP's never-written tail of a range
/// (`FileDescriptor.unwrittenTail`), on the root filesystem (ext4 marks unwritten extents too).
@Suite struct UnwrittenTailTests {
    @Test func theTailStartsWhereTheLastWrittenByteOrHoleEnds() throws {
        try TestSupport.withScratch { directory in
            let mib: Int64 = 1 << 20
            let fd = try FileDescriptor.open(directory + "/file", O_RDWR | O_CREAT | O_EXCL, mode: 0o600)
            #expect(SystemCalls.live.fallocate(fd.rawValue, false, 0, 4 * mib) == 0)
            #expect(try fd.unwrittenTail(from: 0, to: 4 * mib) == 0, "a file only allocated was never written")
            let bytes = [UInt8](repeating: 0x5A, count: Int(mib))
            #expect(bytes.withUnsafeBytes { pwrite(fd.rawValue, $0.baseAddress, $0.count, off_t(mib)) } == Int(mib))
            try fd.sync(.live)
            #expect(try fd.unwrittenTail(from: 0, to: 4 * mib) == 2 * mib)
            #expect(try fd.unwrittenTail(from: 3 * mib, to: 4 * mib) == 3 * mib)
            #expect(try fd.unwrittenTail(from: 0, to: 2 * mib) == 2 * mib, "a range that ends written has no tail")
            #expect(try fd.unwrittenTail(from: 0, to: mib) == 0)
            // A hole at the end: nothing there to give, and nothing before it either.
            try fd.truncate(6 * mib, .live)
            #expect(try fd.unwrittenTail(from: 0, to: 6 * mib) == 6 * mib)
            #expect(try fd.unwrittenTail(from: 2 * mib, to: 6 * mib) == 6 * mib)
        }
    }
}

import Foundation
import Glibc
import TestSupport
import Testing
@testable import ProVideoStorage

/// Capacity is counted in one place, `CapacityAccount` (issue 26), and it matches the disk:
/// the reserve's and the captures' file sizes as `stat` reports them, through grants, returns,
/// a take held in the pool and a salvage. Nothing of the capacity is lost or counted twice.
@Suite struct CapacityAccountTests {
    /// The reserve's size and the bytes the captures' files hold, from the directory itself.
    static func disk(_ pool: Pool) throws -> (reserve: Int64, held: Int64) {
        let reserve = try TestSupport.statSizes(pool.path + "/reserve").size
        let captures = (try? FileManager.default.contentsOfDirectory(atPath: pool.path + "/captures")) ?? []
        let held = try captures.map { try TestSupport.statSizes(pool.path + "/captures/\($0)/data").size }.reduce(0, +)
        return (reserve, held)
    }

    static func account(_ pool: Pool) throws -> CapacityAccount {
        try pool.capacityAccount(pool.reserve(pool.layout.reserve))
    }

    static func waitForProgress(_ capture: Capture, _ bytes: Int64) throws {
        for _ in 0..<500 where try (CaptureJournal.readWritten(capture.files.progress) ?? 0) < bytes {
            try capture.poll()
            usleep(2_000)
        }
    }

    /// The capacity is the one `pool.json` records now, or unknown: with another process's
    /// resize to 8 MiB recorded and `pool.json` then unreadable, a pool opened at 16 MiB
    /// answers neither a replenish nor its remaining capacity (`.corruptState`), and the
    /// reserve stays at 8 MiB. Before, the account fell back to the capacity read at open, and
    /// the remaining capacity was a figure against it.
    /// What `replenish` adds never takes the reserve past the capacity less the grants, even
    /// where a grant is no whole number of units (a file cut by hand: the evidence fuzzer's
    /// case took a replenish 2 KiB over): a refill rounds up to a unit, so the figure is
    /// counted to the limit, which is in whole units.
    @Test func whatIsMissingRoundsUpToNoMoreThanTheLimit() throws {
        let unit: Int64 = 4096, capacity: Int64 = 24 << 20
        for grant: Int64 in [0, 1, 75_776, 4096, 4097, capacity - 1] {
            for reserve: Int64 in [0, 8192, (capacity - grant) / unit * unit] where reserve + grant <= capacity {
                let account = CapacityAccount(
                    reserve: reserve, claims: ReserveClaims.Totals(),
                    captures: [CapacityAccount.CaptureShare(granted: grant, written: grant)],
                    initialCapacity: capacity, unit: unit)
                let refilled = (try account.missing + unit - 1) / unit * unit
                #expect(reserve + refilled + grant <= capacity, "grant \(grant), reserve \(reserve): adds \(refilled)")
                #expect(try account.reserveLimit - reserve == refilled, "grant \(grant), reserve \(reserve)")
            }
        }
    }

    @Test func anUnreadableCapacityIsUnknownNotTheOneReadAtOpen() throws {
        try withPool(capacity: 16 << 20) { pool, _ in
            #expect(try Pool.open(at: pool.path).resize(to: 8 << 20) == 8 << 20)
            let configuration = pool.path + "/pool.json"
            let recorded = try Data(contentsOf: URL(fileURLWithPath: configuration))
            defer { try? recorded.write(to: URL(fileURLWithPath: configuration)) }
            try Data("{".utf8).write(to: URL(fileURLWithPath: configuration))
            let error = #expect(throws: ProVideoError.self) { try pool.replenish() }
            #expect(error?.code == .corruptState, "replenish threw \(String(describing: error))")
            #expect(try TestSupport.statSizes(pool.path + "/reserve").size == 8 << 20, "the reserve grew past the recorded capacity")
            let unknown = #expect(throws: ProVideoError.self) { try pool.remainingCapacity }
            #expect(unknown?.code == .corruptState, "remainingCapacity threw \(String(describing: unknown))")
            // The figures pool.json holds are unknown too: not the 16 MiB, no limit and no
            // bandwidth this process read at open.
            let capacity = #expect(throws: ProVideoError.self) { try pool.initialCapacity }
            #expect(capacity?.code == .corruptState, "initialCapacity threw \(String(describing: capacity))")
            let limit = #expect(throws: ProVideoError.self) { try pool.maxCaptures }
            #expect(limit?.code == .corruptState, "maxCaptures threw \(String(describing: limit))")
            let bandwidth = #expect(throws: ProVideoError.self) { try pool.bandwidth }
            #expect(bandwidth?.code == .corruptState, "bandwidth threw \(String(describing: bandwidth))")
            try recorded.write(to: URL(fileURLWithPath: configuration))
            #expect(try pool.initialCapacity == 8 << 20, "the resize by another Pool shows once pool.json reads")
        }
    }

    /// A capture's progress block that cannot be read leaves its share unknown: the pool's
    /// remaining capacity throws, never counting the capture's whole grant as room (what a
    /// length read as 0 did); a block gone (the capture ending) counts no room of it.
    @Test func anUnreadableProgressBlockIsUnknownNotZero() throws {
        try withPool(capacity: 32 << 20) { pool, scratch in
            var options = testOptions
            options.grantSize = 2 << 20
            let capture = try pool.startCapture(to: scratch + "/a.mov", options: options)
            try capture.append(TestSupport.pattern(3 << 20, seed: 1))
            try Self.waitForProgress(capture, 3 << 20)
            let truth = try pool.remainingCapacity
            let account = try Self.account(pool)
            #expect(try truth == (32 << 20) - (3 << 20) && account.held > 3 << 20, "\(truth) \(account)")
            let progress = capture.files.progress
            let block = try Data(contentsOf: URL(fileURLWithPath: progress))
            defer { try? block.write(to: URL(fileURLWithPath: progress)) }
            // Three bytes: no length at all.
            try Data([1, 2, 3]).write(to: URL(fileURLWithPath: progress))
            let short = #expect(throws: ProVideoError.self) { try pool.remainingCapacity }
            #expect(short?.code == .corruptState, "remainingCapacity threw \(String(describing: short))")
            // The status still answers, with a floor that says why: the capture counts as
            // having written all it was granted (a status that threw showed nothing at all).
            let status = try pool.status()
            #expect(status.remainingCapacity == account.ownReserve
                    && status.remainingCapacityIsAtLeast?.count == 1
                    && status.remainingCapacityIsAtLeast?.first?.contains(progress) == true,
                    "\(status.remainingCapacity) against \(account.ownReserve): \(String(describing: status.remainingCapacityIsAtLeast))")
            // A length past any pool's.
            var huge = block
            huge.replaceSubrange(0..<8, with: [UInt8](repeating: 0xFF, count: 8))
            try huge.write(to: URL(fileURLWithPath: progress))
            let past = #expect(throws: ProVideoError.self) { try pool.remainingCapacity }
            #expect(past?.code == .corruptState, "remainingCapacity threw \(String(describing: past))")
            // Empty, as between the block's create and its fallocate at a capture's start:
            // nothing written yet, so the whole grant is room (a status during a start threw).
            try Data().write(to: URL(fileURLWithPath: progress))
            let granted = try #require(account.captures.first?.granted)
            #expect(try pool.remainingCapacity == account.ownReserve + granted)
            try block.write(to: URL(fileURLWithPath: progress))
            #expect(try pool.remainingCapacity == truth)
            let exact = try pool.status()
            #expect(exact.remainingCapacity == truth && exact.remainingCapacityIsAtLeast == nil)
            // Gone: the capture's share gives no room (its lock went with it: it no longer
            // counts as running), so the figure is the reserve's alone.
            try FileManager.default.removeItem(atPath: progress)
            #expect(try pool.remainingCapacity == account.ownReserve)
            try capture.finish()
        }
    }

    @Test func theAccountMatchesTheDisk() throws {
        try withPool(capacity: 32 << 20) { pool, scratch in
            let capacity = try pool.initialCapacity
            var account = try Self.account(pool)
            var disk = try Self.disk(pool)
            #expect(try account.reserve == disk.reserve && account.held == 0 && account.remaining == capacity)

            // Grants: a running capture with 3 MiB written holds its grants; grants and reserve
            // are the whole capacity, and everyone reports the same remaining capacity.
            var options = testOptions
            options.grantSize = 2 << 20
            let capture = try pool.startCapture(to: scratch + "/a.mov", options: options)
            try capture.append(TestSupport.pattern(3 << 20, seed: 1))
            try Self.waitForProgress(capture, 3 << 20)
            account = try Self.account(pool)
            disk = try Self.disk(pool)
            #expect(try account.reserve == disk.reserve && account.held == disk.held)
            #expect(try account.held > 3 << 20)
            #expect(try account.reserve + account.held == capacity, "\(account)")
            #expect((try account.remaining) == capacity - (3 << 20))
            #expect(try pool.remainingCapacity == (try account.remaining))
            #expect(capture.remainingCapacity == (try account.remaining))

            // Returns: the take leaves the pool by rename; its unused grant is back in the reserve.
            try capture.finish()
            account = try Self.account(pool)
            disk = try Self.disk(pool)
            #expect(try account.held == 0 && disk.held == 0)
            #expect(account.reserve == disk.reserve)
            #expect(account.reserve == capacity - (3 << 20), "\(account)")
            #expect(try account.missing == 3 << 20)

            // A held take (its destination appeared) keeps its blocks out of the capacity too.
            let second = try pool.startCapture(to: scratch + "/b.mov", options: options)
            try second.append(TestSupport.pattern(1 << 20, seed: 2))
            try Data([9]).write(to: URL(fileURLWithPath: scratch + "/b.mov"))
            #expect(throws: ProVideoError.self) { try second.finish() }
            account = try Self.account(pool)
            disk = try Self.disk(pool)
            #expect(try account.held == 0 && account.reserve == disk.reserve)
            #expect((try account.remaining) == capacity - (4 << 20), "\(account)")

            // A salvage: a capture dropped with 1 MiB committed is placed, its grant returned.
            var options0 = options
            options0.durabilityInterval = 0
            var third: Capture? = try pool.startCapture(to: scratch + "/c.mov", options: options0)
            try third!.append(TestSupport.pattern(1 << 20, seed: 3))
            for _ in 0..<500 where third!.committedLength < 1 << 20 {
                try third!.poll()
                usleep(2_000)
            }
            third = nil
            let recovery = try Pool.salvage(at: pool.path)
            #expect(recovery.salvaged.map(\.length) == [1 << 20])
            account = try Self.account(pool)
            disk = try Self.disk(pool)
            #expect(try account.held == 0 && disk.held == 0 && account.reserve == disk.reserve)
            #expect((try account.remaining) == capacity - (5 << 20), "\(account)")
            #expect(try pool.remainingCapacity == (try account.remaining))
        }
    }
}

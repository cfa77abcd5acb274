import Foundation
import Synchronization
import TestSupport
import Testing
@testable import ProVideoStorage

/// The pool's mutation lock is waited for with a deadline, and opening a pool never waits for
/// it (a `status` during a long move or a zero-filling create answers at once).
@Suite struct PoolLockTests {
    @Test func aHeldMutationLockIsWaitedForUntilItsDeadline() throws {
        try TestSupport.withScratch("mutation-deadline") { scratch in
            let pool = try Pool.create(at: scratch + "/pool", capacity: 8 << 20, measuringBandwidth: false)
            defer { try? pool.destroy() }
            let holder = try PoolLock(path: pool.layout.lock, access: pool.access)
            let waiter = try PoolLock(path: pool.layout.lock, access: pool.access)
            waiter.mutationWaitLimit = 200_000_000
            let probe = SchedulingProbe()
            try holder.withMutation {
                let waited = Self.expectBusy(after: 200_000_000, saying: "held the pool's lock") { try waiter.withMutation { } }
                // The deadline and one polling step (under 100 ms) more, plus what this machine
                // took to wake a sleeping thread meanwhile (measured beside it).
                let allowed = 300_000_000 + UInt64(probe.stop() * 1e9)
                let why = "waited \(waited / 1_000_000) ms, allowed \(allowed / 1_000_000) ms "
                    + "(the deadline, a step, and the worst wake-up lateness: \(probe.summary))"
                #expect(waited < allowed, "\(why)")
                let opened = try Pool.open(at: scratch + "/pool")
                #expect(try opened.initialCapacity == 8 << 20)
            }
            #expect(try waiter.withMutation { 7 } == 7)
        }
    }

    /// A hold nested in itself on one thread keeps the byte until the outer hold ends: the
    /// inner one's end releases nothing another open file description could take (issue 63:
    /// releasing one step early survived the suite). `withReserve` inside `withReserve` is the
    /// nesting the give-back's counting does under the size lock's caller.
    @Test func aNestedHoldKeepsTheByteUntilTheOuterOneEnds() throws {
        try TestSupport.withScratch("nested-hold") { scratch in
            let pool = try Pool.create(at: scratch + "/pool", capacity: 8 << 20, measuringBandwidth: false)
            defer { try? pool.destroy() }
            let holder = try PoolLock(path: pool.layout.lock, access: pool.access)
            let other = try PoolLock(path: pool.layout.lock, access: pool.access)
            try holder.withMutation {
                let inner = try holder.withMutation { try other.withMutationIfFree { 1 } }
                #expect(inner == nil, "another description took the mutation lock while it was held twice")
                #expect(try other.withMutationIfFree { 1 } == nil, "the inner hold's end let the mutation lock go")
            }
            #expect(try other.withMutationIfFree { 1 } == 1, "the outer hold's end did not let it go")
        }
    }

    /// Threads of one process wait for each other's hold of the reserve lock in the kernel
    /// (`ThreadLock.lock(until:)`), up to the deadline, and take it once it is let go; two
    /// `PoolLock`s of the process on one file (two captures' grants) share that hold
    /// (`ThreadHold.reserveHolds`) rather than meet only at the OFD byte, polled.
    @Test func anotherThreadsHoldIsWaitedForUntilItsDeadline() throws {
        try TestSupport.withScratch("thread-hold-deadline") { scratch in
            let pool = try Pool.create(at: scratch + "/pool", capacity: 8 << 20, measuringBandwidth: false)
            defer { try? pool.destroy() }
            // PoolLock is not Sendable: its callers share it across their own threads.
            nonisolated(unsafe) let holder = try PoolLock(path: pool.layout.lock, access: pool.access)
            let waiter = try PoolLock(path: pool.layout.lock, access: pool.access)
            waiter.mutationWaitLimit = 200_000_000
            let holding = DispatchSemaphore(value: 0), letGo = DispatchSemaphore(value: 0), ended = DispatchSemaphore(value: 0)
            let holderError = Mutex<(any Error)?>(nil)
            Thread.detachNewThread {
                do { try holder.withReserve { holding.signal(); letGo.wait() } } catch { holderError.withLock { $0 = error } }
                ended.signal()
            }
            holding.wait()
            Self.expectBusy(after: 200_000_000, saying: "another thread of this process has held the pool's reserve lock") {
                try waiter.withReserve { }
            }
            waiter.mutationWaitLimit = UInt64(TestSupport.hangLimit * 1e9)
            letGo.signal()
            #expect(try waiter.withReserve { 7 } == 7)
            ended.wait()
            #expect(holderError.withLock { $0 } == nil)
        }
    }

    /// Runs `body`, a wait for a lock another holds that gives up after `limit` nanoseconds:
    /// it must throw `.busy` saying `says`, and not before `limit`. Returns the nanoseconds waited.
    @discardableResult
    private static func expectBusy(after limit: UInt64, saying says: String, _ body: () throws -> Void) -> UInt64 {
        let start = MonotonicTime.now()
        let error = #expect(throws: ProVideoError.self) { try body() }
        let waited = MonotonicTime.now() - start
        #expect(error?.code == .busy)
        #expect(error?.message.contains(says) == true, "\(String(describing: error))")
        #expect(waited >= limit, "gave up after \(waited) ns, before its deadline")
        return waited
    }
}

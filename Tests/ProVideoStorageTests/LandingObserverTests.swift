import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing
@testable import ProVideoStorage

/// `landPending` reports each transfer's bytes (`LandingObserver`), for `land`'s progress line:
/// the copy from where it starts, the read-back, then the end of the attempt.
@Suite struct LandingObserverTests {
    struct Event: Equatable {
        var step: OperationControl.Step?
        var done: Int64
        var total: Int64
    }

    /// Set by `slowDestructor` once it has run.
    static let destructorsRun = Atomic<Int>(0)

    /// Keeps the landing thread ending for 200 ms after its last report: long after a detached
    /// thread's caller was told and returned.
    static let slowDestructor: @convention(c) (UnsafeMutableRawPointer?) -> Void = { _ in
        usleep(200_000)
        LandingObserverTests.destructorsRun.add(1, ordering: .sequentiallyConsistent)
    }

    /// `landPending` returns only once its threads have ended, their thread-local destructors
    /// included (`JoinedThread`): a process that exits then frees nothing a landing thread still
    /// frees (CI: `provideo land` SIGSEGV in libcrypto, whose exit handler raced a thread's end).
    @Test func aLandingReturnsOnlyOnceItsThreadsHaveEnded() throws {
        try TestSupport.withScratch { scratch in
            try TestSupport.withScratchOnAnotherFilesystem { other in
                let pool = try Pool.create(at: scratch + "/pool", capacity: 32 << 20, measuringBandwidth: false)
                defer { try? Pool.open(at: pool.path).destroy() }
                var options = CaptureOptions(bitrate: 100_000_000)
                options.landing = .background
                for index in 0..<2 {
                    let capture = try pool.startCapture(to: other + "/take-\(index).mov", options: options)
                    try capture.append(TestSupport.pattern(1 << 20, seed: UInt64(index)))
                    _ = try capture.finish()
                }
                var created = pthread_key_t()
                try #require(pthread_key_create(&created, Self.slowDestructor) == 0)
                let key = created
                defer { pthread_key_delete(key) }
                let before = Self.destructorsRun.load(ordering: .sequentiallyConsistent)
                let threads = Mutex<Set<UInt>>([])
                let observer: LandingObserver = { _, _, _, _ in
                    // A non-nil value, so the destructor runs when this thread ends.
                    pthread_setspecific(key, UnsafeRawPointer(bitPattern: 1))
                    threads.withLock { _ = $0.insert(UInt(pthread_self())) }
                }
                #expect(try pool.landPending(parallel: 2, observer: observer).map(\.landed) == [true, true])
                let landingThreads = threads.withLock { $0 }
                #expect(!landingThreads.isEmpty && !landingThreads.contains(UInt(pthread_self())))
                #expect(Self.destructorsRun.load(ordering: .sequentiallyConsistent) - before == landingThreads.count)
            }
        }
    }

    @Test func aTransferReportsItsCopyItsReadBackAndItsEnd() throws {
        try TestSupport.withScratch { scratch in
            try TestSupport.withScratchOnAnotherFilesystem { other in
                let pool = try Pool.create(at: scratch + "/pool", capacity: 48 << 20, bandwidth: 1_000_000_000)
                defer { try? Pool.open(at: pool.path).destroy() }
                let destination = other + "/take.mov", length: Int64 = 20 << 20
                var options = CaptureOptions(bitrate: 100_000_000)
                options.landing = .background
                let capture = try pool.startCapture(to: destination, options: options)
                try capture.append(TestSupport.pattern(Int(length), seed: 3))
                _ = try capture.finish()

                // Stopped in its second chunk: the first is flushed and recorded, the second is not.
                let events = Mutex<[Event]>([])
                let stop = Atomic<Bool>(false)
                let observer: LandingObserver = { seen, step, done, total in
                    #expect(seen == destination)
                    events.withLock { $0.append(Event(step: step, done: done, total: total)) }
                    if step == .copying && done > LandingRecord.chunk + (1 << 20) { stop.store(true, ordering: .relaxed) }
                }
                #expect(try pool.landPending(shouldStop: { stop.load(ordering: .relaxed) }, observer: observer) == [])
                let stopped = events.withLock { $0 }
                #expect(stopped.first == Event(step: .copying, done: 0, total: length))
                #expect(stopped.last == Event(step: nil, done: 0, total: length))
                #expect(stopped.dropLast().allSatisfy { $0.step == .copying && $0.total == length })
                #expect(stopped.dropLast().map(\.done) == stopped.dropLast().map(\.done).sorted())

                events.withLock { $0 = [] }
                stop.store(false, ordering: .relaxed)
                #expect(try pool.landPending(observer: observer).map(\.landed) == [true])
                let resumed = events.withLock { $0 }
                // It starts where the recorded chunk ends, copies to the end, reads all three
                // chunks back (8, 16 and 20 MiB), and ends.
                #expect(resumed.first == Event(step: .copying, done: LandingRecord.chunk, total: length))
                let copied = resumed.filter { $0.step == .copying }.map(\.done)
                #expect(copied == copied.sorted() && copied.last == length)
                #expect(resumed.filter { $0.step == .verifying }.map(\.done) == [8 << 20, 16 << 20, 20 << 20])
                #expect(resumed.last == Event(step: nil, done: 0, total: length))
                #expect(resumed.filter { $0.step == nil }.count == 1)
            }
        }
    }
}

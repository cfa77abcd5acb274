import Foundation
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

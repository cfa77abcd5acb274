import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing
@testable import ProVideoStorage

/// Progress and cancellation are parameters (issue 26): two copies running at once on two
/// threads, each handed its own control, each report only their own bytes, and cancelling one
/// stops that one alone. With one process-wide observer and a thread-local cancellation flag
/// the first could not be told apart and the second depended on which thread ran the copy.
@Suite struct OperationControlTests {
    /// Every (step, done, total) one control was given.
    final class StepLog: Sendable {
        private let entries = Mutex<[(step: OperationControl.Step, done: Int64, total: Int64)]>([])
        func record(_ step: OperationControl.Step, _ done: Int64, _ total: Int64) {
            entries.withLock { $0.append((step, done, total)) }
        }
        var all: [(step: OperationControl.Step, done: Int64, total: Int64)] { entries.withLock { $0 } }
    }

    /// A capture's rename out of the pool answers EXDEV, so that finishing it copies.
    static func copyingOut(_ pool: String) -> SystemCalls {
        var calls = SystemCalls.live
        calls.renameNoReplace = { rawFrom, rawTo in
            TestSupport.resolved(rawFrom).hasPrefix(pool + "/captures/") ? -EXDEV : SystemCalls.live.renameNoReplace(rawFrom, rawTo)
        }
        calls.copyFileRange = { fdIn, offsetIn, fdOut, offsetOut, length in
            FaultCallLog.emulatedCopy(fdIn, offsetIn, fdOut, offsetOut, min(length, 256 << 10))
        }
        return calls
    }

    /// Runs `body` on a thread of its own; returns once it has ended, with its result.
    static func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) -> @Sendable () -> Result<T, Error> {
        let result = Mutex<Result<T, Error>?>(nil)
        let thread = Thread { let outcome = Result { try body() }; result.withLock { $0 = outcome } }
        thread.start()
        return {
            while true {
                if let done = result.withLock({ $0 }) { return done }
                usleep(1_000)
            }
        }
    }

    // A hang guard, not a timing: the copies take well under a second on an idle machine.
    @Test(.timeLimit(.minutes(3)))
    func twoCopiesAtOnceEachReportTheirOwnAndCancelAlone() throws {
        try TestSupport.withScratch(#function) { scratch in
            let poolPath = scratch + "/pool"
            let pool = try Pool.create(at: poolPath, capacity: 32 << 20, systemCalls: Self.copyingOut(poolPath))
            let lengths: [Int] = [3_000_000, 5_000_000, 4_000_000]
            var captures: [Capture] = []
            for (index, length) in lengths.enumerated() {
                let capture = try pool.startCapture(to: scratch + "/take\(index).mov", options: AsyncAPITests.options)
                try capture.append(TestSupport.pattern(length, seed: UInt64(index)))
                captures.append(capture)
            }
            let logs = lengths.map { _ in StepLog() }
            // The third copy is cancelled by its own observer once it has copied 1 MiB.
            let cancellation = OperationControl.Cancellation()
            let controls = [
                OperationControl(observer: { logs[0].record($0, $1, $2) }),
                OperationControl(observer: { logs[1].record($0, $1, $2) }),
                OperationControl(observer: { step, done, total in
                    logs[2].record(step, done, total)
                    if done >= 1 << 20 { cancellation.cancel() }
                }, cancellation: cancellation),
            ]
            let handed = captures
            let waits = (0..<3).map { index in
                Self.onThread { try handed[index].finish(control: controls[index]).path }
            }
            let results = waits.map { $0() }

            for index in 0..<2 {
                let path = try results[index].get()
                #expect(path == scratch + "/take\(index).mov")
                let same = TestSupport.fileHolds(path, TestSupport.pattern(lengths[index], seed: UInt64(index)))
                #expect(same, "take\(index) does not hold its bytes")
                let log = logs[index].all
                let length = Int64(lengths[index])
                // Its own bytes only: every total is its length, the copy reached it, and both
                // verification passes (the recording, then the copy) read it whole.
                #expect(!log.isEmpty && log.allSatisfy { $0.total == length }, "take\(index): \(log.prefix(4))")
                #expect(log.filter { $0.step == .copying }.map(\.done).max() == length)
                #expect(log.filter { $0.step == .verifying && $0.done == length }.count == 2)
            }
            guard case .failure(let error as ProVideoError) = results[2] else {
                Issue.record("the cancelled finish ended with \(results[2])")
                return
            }
            #expect(error.code == .cancelled, "\(error)")
            #expect(!FileManager.default.fileExists(atPath: scratch + "/take2.mov"))
            #expect(logs[2].all.allSatisfy { $0.total == Int64(lengths[2]) })
            let held = try pool.listing().recordings
            #expect(held.count == 1)
            #expect(try pool.check() == [])
        }
    }
}

import Foundation
import Glibc
import Testing
@testable import ProVideoStorage

extension CrashTests {
    /// Two `provideo record` processes started at the same moment on one pool: exactly one
    /// wins and keeps recording, the other exits 1 with the busy error; the winner then
    /// finishes normally. 50 times.
    @Suite struct StartRace {
        static let iterations = 50

        @Test func exactlyOneOfTwoRecordersWins() throws {
            _ = CrashKit.ignoreSIGPIPE
            try TestSupport.withScratch("crash-race") { dir in
                let pool = dir + "/pool"
                try CrashKit.createPool(pool, capacity: "16M")
                defer { _ = try? CrashKit.provideo(pool, ["destroy"]) }
                let capacity = try CrashKit.status(pool).initialCapacity
                var winners = [0, 0]
                for iteration in 0..<Self.iterations {
                    let destinations = [dir + "/a-\(iteration).bin", dir + "/b-\(iteration).bin"]
                    var recorders: [Process] = []
                    defer {
                        for recorder in recorders where recorder.isRunning {
                            kill(recorder.processIdentifier, SIGKILL)
                            recorder.waitUntilExit()
                        }
                    }
                    for destination in destinations {
                        recorders.append(try TestSupport.start("provideo", ["--pool", pool, "record", destination, "--bitrate", "20M"],
                                                               stdinPipe: true))
                    }
                    let deadline = Date(timeIntervalSinceNow: 15)
                    while recorders.allSatisfy(\.isRunning) && Date() < deadline { usleep(2_000) }
                    guard let loserIndex = recorders.firstIndex(where: { !$0.isRunning }) else {
                        Issue.record("iteration \(iteration): neither recorder was refused within 15 s (both won?)")
                        return
                    }
                    let loser = recorders[loserIndex], winner = recorders[1 - loserIndex]
                    loser.waitUntilExit()
                    let loserError = String(decoding: (loser.standardError as! Pipe).fileHandleForReading.readDataToEndOfFile(),
                                            as: UTF8.self)
                    #expect(loser.terminationReason == .exit && loser.terminationStatus == 1,
                            "iteration \(iteration): the loser ended with \(loser.terminationStatus): \(loserError)")
                    #expect(loserError.contains("busy"), "iteration \(iteration): the loser said: \(loserError)")
                    // The winner keeps recording: it is still running, and the pool says so.
                    usleep(50_000)
                    #expect(winner.isRunning, "iteration \(iteration): both recorders ended")
                    let during = try CrashKit.status(pool)
                    #expect(during.busyReasons == ["capturing"], "iteration \(iteration): busy \(during.busyReasons)")
                    #expect(during.capture?.destination == destinations[1 - loserIndex])
                    winners[1 - loserIndex] += 1

                    let payload = TestSupport.pattern(1000 + iteration, seed: UInt64(iteration))
                    let input = (winner.standardInput as! Pipe).fileHandleForWriting
                    CrashKit.writeAll(input.fileDescriptor, payload[...])
                    try input.close()
                    try? (loser.standardInput as! Pipe).fileHandleForWriting.close()
                    #expect(TestSupport.wait(winner, seconds: 15), "iteration \(iteration): the winner did not finish")
                    #expect(winner.terminationReason == .exit && winner.terminationStatus == 0,
                            "iteration \(iteration): the winner exited \(winner.terminationStatus)")
                    #expect(TestSupport.fileEquals(destinations[1 - loserIndex], payload))
                    #expect(!CrashKit.exists(destinations[loserIndex]), "iteration \(iteration): the loser left a file")
                    try? FileManager.default.removeItem(atPath: destinations[1 - loserIndex])
                    if iteration % 10 == 9 {
                        let replenish = try CrashKit.provideo(pool, ["replenish"])
                        #expect(replenish.status == 0, "\(replenish)")
                        #expect(try CrashKit.status(pool).remainingCapacity == capacity)
                    }
                }
                print("start race: first-started won \(winners[0]) times, second-started \(winners[1]) times")
                try CrashKit.expectSane(pool, "after the start race")
            }
        }
    }
}

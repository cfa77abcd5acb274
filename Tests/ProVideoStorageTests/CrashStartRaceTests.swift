import Foundation
import Glibc
import TestSupport
import Testing
@testable import ProVideoStorage

extension CrashTests {
    /// Two `provideo record` processes started at the same moment on a pool that takes one
    /// capture at a time (`--max-captures 1`): exactly one wins and keeps recording, the other
    /// exits 1 with the busy error; the winner then finishes normally. 50 times.
    @Suite struct StartRace {
        static let iterations = 50

        @Test func exactlyOneOfTwoRecordersWins() throws {
            _ = CrashKit.ignoreSIGPIPE
            try TestSupport.withScratch("crash-race") { dir in
                let pool = dir + "/pool"
                try CrashKit.createPool(pool, capacity: "16M", options: ["--max-captures", "1"])
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
                    #expect(during.busyReasons == [.capturing], "iteration \(iteration): busy \(during.busyReasons)")
                    #expect(during.captures.first?.destination == destinations[1 - loserIndex])
                    winners[1 - loserIndex] += 1

                    let payload = TestSupport.pattern(1000 + iteration, seed: UInt64(iteration))
                    let input = (winner.standardInput as! Pipe).fileHandleForWriting
                    CrashKit.writeAll(input.fileDescriptor, payload[...])
                    try input.close()
                    try? (loser.standardInput as! Pipe).fileHandleForWriting.close()
                    #expect(TestSupport.wait(winner), "iteration \(iteration): the winner did not finish")
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

        /// While a capture runs in a one-capture pool, a resize, a destroy and another record
        /// are refused with the busy error (exit 1), not queued, and change nothing; a replenish
        /// runs beside it and adds nothing; the capture then finishes normally.
        @Test func operationsDuringACaptureAreRefused() throws {
            _ = CrashKit.ignoreSIGPIPE
            try TestSupport.withScratch("crash-busy") { dir in
                let pool = dir + "/pool"
                try CrashKit.createPool(pool, capacity: "16M", options: ["--max-captures", "1"])
                defer { _ = try? CrashKit.provideo(pool, ["destroy"]) }
                let destination = dir + "/take.bin"
                let recorder = try TestSupport.start("provideo", ["--pool", pool, "record", destination, "--bitrate", "20M"],
                                                     stdinPipe: true)
                defer {
                    if recorder.isRunning { kill(recorder.processIdentifier, SIGKILL) }
                    recorder.waitUntilExit()
                }
                let input = (recorder.standardInput as! Pipe).fileHandleForWriting
                let payload = TestSupport.pattern(300_001, seed: 8)
                CrashKit.writeAll(input.fileDescriptor, payload[...])
                let deadline = Date(timeIntervalSinceNow: 15)
                while try CrashKit.status(pool).busyReasons != [.capturing] && Date() < deadline { usleep(20_000) }
                try #require(try CrashKit.status(pool).busyReasons == [.capturing])
                let state = try Data(contentsOf: URL(fileURLWithPath: pool + "/pool.json"))
                for command in [["resize", "32M"], ["resize", "8M"], ["destroy"], ["record", dir + "/other.bin"]] {
                    let outcome = try CrashKit.provideo(pool, command, input: command[0] == "record" ? Array("x".utf8) : nil)
                    #expect(outcome.reason == .exit && outcome.status == 1 && outcome.stderr.contains("busy"),
                            "\(command) during a capture: \(outcome)")
                }
                // Replenish runs beside captures: the reserve and the capture's grant already make
                // the capacity, so it adds nothing.
                let replenish = try CrashKit.provideo(pool, ["replenish"])
                #expect(replenish.reason == .exit && replenish.status == 0, "replenish during a capture: \(replenish)")
                #expect(try Data(contentsOf: URL(fileURLWithPath: pool + "/pool.json")) == state)
                #expect(!CrashKit.exists(dir + "/other.bin"))
                #expect(recorder.isRunning)
                try input.close()
                #expect(TestSupport.wait(recorder) && recorder.terminationStatus == 0)
                #expect(TestSupport.fileEquals(destination, payload))
                let sane = try CrashKit.expectSane(pool, "after the refused operations")
                #expect(sane.initialCapacity == 16 << 20)
                #expect(sane.remainingCapacity == 16 << 20 - TestSupport.roundUp(Int64(payload.count), CrashKit.unit))
            }
        }
    }
}

import Foundation
import Glibc
import TestSupport
import Testing
@testable import ProVideoStorage

extension CrashTests {
    /// Kill points inside every pool operation: `PROVIDEO_CRASH_AT=<step>` makes the process
    /// SIGKILL itself at that step; the next process to open the pool must repair it, lose no
    /// recording, and leave accounting that `provideo check` and coreutils `stat` agree with.
    @Suite struct KillPoints {
        /// Every scenario below, by crash point name. A named step in the sources that is not
        /// here fails `everyCrashPointIsCovered`.
        static let scenarios = [
            "create.allocated", "resize.allocated/grow", "resize.allocated/shrink", "replenish.allocated",
            "destroy.reserveRemoved", "destroy.configurationRemoved", "capture.journaled", "grant.allocated", "finish.placed",
            "finish.reserveRebuilt", "cancel.revoked", "cancel.journaled",
        ]
        static let mib: Int64 = 1 << 20

        @Test func everyCrashPointIsCovered() throws {
            let inSources = try CrashKit.crashPointsInSources()
            #expect(inSources.count >= 5, "found only \(inSources) in Sources/ProVideoStorage")
            let covered = Set(Self.scenarios.map { String($0.split(separator: "/")[0]) })
            #expect(inSources.subtracting(covered).isEmpty,
                    "crash points without a kill test: \(inSources.subtracting(covered).sorted())")
        }

        @Test(arguments: scenarios)
        func killedAt(_ scenario: String) throws {
            let point = String(scenario.split(separator: "/")[0])
            // A scenario whose crash point the sources do not have would kill nothing and pass.
            try #require(try CrashKit.crashPointsInSources().contains(point), "no crash point named \(point) in the sources")
            try TestSupport.withScratch("crash-\(point)") { dir in
                let pool = dir + "/pool"
                defer { if CrashKit.exists(pool + "/pool.json") { _ = try? CrashKit.provideo(pool, ["destroy"]) } }
                switch scenario {
                case "create.allocated": try create(pool)
                case "resize.allocated/grow": try resize(pool, from: "16M", to: "32M")
                case "resize.allocated/shrink": try resize(pool, from: "32M", to: "16M")
                case "replenish.allocated": try replenish(pool, dir)
                case "destroy.reserveRemoved", "destroy.configurationRemoved": try destroy(pool, point)
                case "capture.journaled", "grant.allocated", "finish.placed", "finish.reserveRebuilt":
                    try capture(pool, dir, point)
                case "cancel.revoked", "cancel.journaled": try cancel(pool, dir, point)
                default: Issue.record("no scenario for \(scenario)")
                }
            }
        }

        private func expectKilled(_ outcome: CrashKit.Outcome, _ point: String,
                                  sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(outcome.killedBySIGKILL, "PROVIDEO_CRASH_AT=\(point) did not kill the process: \(outcome)",
                    sourceLocation: sourceLocation)
        }

        /// Killed after the new reserve was allocated, before pool.json: no pool exists (a half
        /// built one must not look like a pool), and creating it again discards the remnant.
        private func create(_ pool: String) throws {
            let killed = try CrashKit.provideo(pool, ["create", "--capacity", "16M"],
                                               environment: ["PROVIDEO_CRASH_AT": "create.allocated"])
            expectKilled(killed, "create.allocated")
            let status = try CrashKit.provideo(pool, ["status"])
            #expect(status.status == 1 && status.stderr.contains("no pool"), "a killed create is not a pool: \(status)")
            let again = try CrashKit.provideo(pool, ["create", "--capacity", "16M"])
            #expect(again.status == 0, "create after a killed create: \(again)")
            let sane = try CrashKit.expectSane(pool, "create.allocated")
            #expect(sane.initialCapacity == 16 * Self.mib && sane.remainingCapacity == 16 * Self.mib)
            #expect(CrashKit.contents(pool) == ["pool.json", "pool.lock", "reserve", "spare"])
            let reserve = try #require(CrashKit.stat(pool + "/reserve"))
            #expect(reserve.allocated >= 16 * Self.mib && reserve.allocated <= 16 * Self.mib + 256 << 10,
                    "the remnant of the killed create was not freed: reserve allocates \(reserve.allocated)")
        }

        /// Killed after the reserve was grown or shrunk, before pool.json recorded the new
        /// capacity: the next open must leave a pool whose reserve and capacity agree (either
        /// the old or the new size), and a resize afterwards completes.
        private func resize(_ pool: String, from: String, to: String) throws {
            try CrashKit.createPool(pool, capacity: from)
            let killed = try CrashKit.provideo(pool, ["resize", to], environment: ["PROVIDEO_CRASH_AT": "resize.allocated"])
            expectKilled(killed, "resize.allocated")
            let sane = try CrashKit.expectSane(pool, "resize.allocated \(from) → \(to)")
            #expect([16 * Self.mib, 32 * Self.mib].contains(sane.initialCapacity))
            if to == "32M" {
                // A grow the configuration never recorded must not leave the pool holding more
                // than its capacity. (A killed shrink may leave the old capacity with the smaller
                // reserve, as after a capture: `replenish` would restore it.)
                #expect(sane.remainingCapacity == sane.initialCapacity,
                        "after a killed grow the reserve (\(sane.remainingCapacity)) and the capacity (\(sane.initialCapacity)) disagree")
            }
            let again = try CrashKit.provideo(pool, ["resize", to])
            #expect(again.status == 0, "resize after a killed resize: \(again)")
            let after = try CrashKit.expectSane(pool, "resize again")
            let target = to == "32M" ? 32 * Self.mib : 16 * Self.mib
            #expect(after.initialCapacity == target && after.remainingCapacity == target)
        }

        /// Killed after the reserve grew back, before reporting: the reserve is whole and the
        /// pool consistent.
        private func replenish(_ pool: String, _ dir: String) throws {
            try CrashKit.createPool(pool, capacity: "16M")
            let input = TestSupport.pattern(3 << 20, seed: 7)
            let recorded = try CrashKit.provideo(pool, ["record", dir + "/take.bin", "--bitrate", "20M"], input: input)
            try #require(recorded.status == 0, "record: \(recorded)")
            #expect(try CrashKit.status(pool).remainingCapacity == 16 * Self.mib - 3 * Self.mib)
            let killed = try CrashKit.provideo(pool, ["replenish"], environment: ["PROVIDEO_CRASH_AT": "replenish.allocated"])
            expectKilled(killed, "replenish.allocated")
            let sane = try CrashKit.expectSane(pool, "replenish.allocated")
            #expect(sane.remainingCapacity == 16 * Self.mib, "the replenish reached its allocation before the kill")
            #expect(TestSupport.fileEquals(dir + "/take.bin", input))
            let again = try CrashKit.provideo(pool, ["replenish"])
            #expect(again.status == 0, "replenish after a killed replenish: \(again)")
            try CrashKit.expectSane(pool, "replenish again")
        }

        /// Killed inside destroy: whatever is left is either a valid pool (check passes) or
        /// nothing; running destroy again finishes the job and frees the reserve.
        private func destroy(_ pool: String, _ point: String) throws {
            try CrashKit.createPool(pool, capacity: "16M")
            let killed = try CrashKit.provideo(pool, ["destroy"], environment: ["PROVIDEO_CRASH_AT": point])
            expectKilled(killed, point)
            if CrashKit.exists(pool + "/pool.json") {
                let sane = try CrashKit.expectSane(pool, point)
                #expect(sane.remainingCapacity == 0 || sane.remainingCapacity == 16 * Self.mib)
            }
            let again = try CrashKit.provideo(pool, ["destroy"])
            #expect(again.status == 0, "destroy after a killed destroy: \(again)")
            #expect(!CrashKit.exists(pool), "the pool directory is still there: \(CrashKit.contents(pool))")
        }

        /// A capture killed at a step of start or finish. `record` is fed a known input; when
        /// the kill comes after the final commit (finish.*), the whole input is committed and
        /// must end up at the destination, byte for byte, and the reserve rebuilt to exactly the
        /// capacity less the recording rounded to the allocation unit. Killed before the
        /// capture was granted space (capture.journaled) or while its first grant was half made
        /// (grant.allocated: its file allocated, the reserve not yet cut), nothing was accepted:
        /// no file appears and the capacity is whole.
        private func capture(_ pool: String, _ dir: String, _ point: String) throws {
            try CrashKit.createPool(pool, capacity: "16M")
            let destination = dir + "/take.mov"
            let input = TestSupport.pattern(3 << 20 + 4097, seed: 11)
            let killed = try CrashKit.provideo(pool, ["record", destination, "--bitrate", "20M"], input: input,
                                               environment: ["PROVIDEO_CRASH_AT": point])
            expectKilled(killed, point)
            #expect(!CrashKit.contents(dir).contains { $0.contains(".partial") }, "a partial file beside the destination")
            let recover = try CrashKit.provideo(pool, ["recover"])
            #expect(recover.status == 0, "recover: \(recover)")
            let sane = try CrashKit.expectSane(pool, point)
            #expect(try CrashKit.status(pool).initialCapacity == 16 * Self.mib)
            #expect(try TestSupport.poolListing(pool).recordings.isEmpty, "the recording was held instead of placed")
            if point == "capture.journaled" || point == "grant.allocated" {
                #expect(!CrashKit.exists(destination), "nothing was accepted, yet \(destination) exists")
                #expect(sane.remainingCapacity == 16 * Self.mib)
            } else {
                #expect(TestSupport.fileEquals(destination, input),
                        "\(destination) has \(CrashKit.stat(destination)?.size ?? -1) bytes, want the \(input.count) committed")
                #expect(sane.remainingCapacity == 16 * Self.mib - TestSupport.roundUp(Int64(input.count), CrashKit.unit))
                #expect(recover.stdout.contains("\(input.count) bytes") || !recover.stdout.contains("recovered"),
                        "recover reports another length: \(recover.stdout)")
            }
            #expect(CrashKit.contents(dir).filter { $0 != "pool" } == (CrashKit.exists(destination) ? ["take.mov"] : []))
        }

        /// Killed after cancel zeroed the commit records (`cancel.revoked`: a recording that
        /// committed nothing, discarded) or journaled its intent (`cancel.journaled`: the
        /// repair finishes the cancel): either way the bytes are discarded, the capacity comes
        /// back whole, no file is at the destination. There is no CLI path to cancel, so a
        /// child process re-runs `cancelKilledInChildProcess`.
        private func cancel(_ pool: String, _ dir: String, _ point: String) throws {
            guard let executable = CrashKit.testExecutable else {
                Issue.record("cannot find the test executable to run the cancel child in")
                return
            }
            try CrashKit.createPool(pool, capacity: "16M")
            let destination = dir + "/take.mov"
            let child = try CrashKit.run(executable, ["--testing-library", "swift-testing", "--filter", "cancelKilledInChildProcess"],
                                         environment: ["PROVIDEO_CRASH_AT": point,
                                                       "PROVIDEO_CRASH_CHILD_POOL": pool,
                                                       "PROVIDEO_CRASH_CHILD_DESTINATION": destination])
            expectKilled(child, point)
            let recover = try CrashKit.provideo(pool, ["recover"])
            #expect(recover.status == 0, "recover: \(recover)")
            let sane = try CrashKit.expectSane(pool, point)
            #expect(sane.remainingCapacity == 16 * Self.mib, "a cancelled capture's capacity did not come back whole")
            #expect(!CrashKit.exists(destination), "a cancelled capture produced \(destination)")
            #expect(try TestSupport.poolListing(pool).recordings.isEmpty)
        }
    }
}

/// Run only as the child of `KillPoints.killedAt("cancel.…")` (skipped otherwise): starts a
/// capture in the pool the parent names, appends 2 MiB and cancels, which kills this process
/// at the parent's crash point.
@Suite("Child process of killedAt(cancel.journaled): skipped unless that test starts it")
struct ChildProcessOnlyCancel {
    @Test(.enabled(if: ProcessInfo.processInfo.environment["PROVIDEO_CRASH_CHILD_POOL"] != nil,
                   "runs only as the child process of KillPoints.killedAt(cancel.journaled)"))
    func cancelKilledInChildProcess() throws {
        let environment = ProcessInfo.processInfo.environment
        let poolPath: String = try #require(environment["PROVIDEO_CRASH_CHILD_POOL"])
        let pool = try Pool.open(at: poolPath)
        let capture = try pool.startCapture(to: try #require(environment["PROVIDEO_CRASH_CHILD_DESTINATION"]),
                                            options: CaptureOptions(bitrate: 20_000_000, durabilityInterval: 0))
        try capture.append(TestSupport.pattern(2 << 20 + 5, seed: 3))
        try capture.cancel()
        Issue.record("cancel returned: PROVIDEO_CRASH_AT=\(environment["PROVIDEO_CRASH_AT"] ?? "") did not kill the process")
    }
}

import Foundation
import Glibc
import TestSupport
import Testing

/// `land --fleet FILE --slots N` (issue 43): servers that land onto one store share a budget
/// kept on the store itself, one OFD lock per slot of FILE. Two "servers" here are two pools,
/// each with its own `provideo land` process, sharing one slots file.
@Suite(.enabled(if: FileManager.default.fileExists(atPath: "/dev/shm"), "no /dev/shm (tmpfs) on this machine"))
struct FleetLandingTests {
    /// Two pools, each holding one take of `bytes` waiting to land at its own destination on
    /// /dev/shm (another filesystem); the destinations are removed afterwards.
    static func withTwoServers(bytes: Int, _ name: String = #function,
                               _ body: (_ scratch: String, _ pools: [String], _ inputs: [[UInt8]], _ destinations: [String]) throws -> Void) throws {
        try TestSupport.withScratch(name) { scratch in
            let pools = [scratch + "/server-a", scratch + "/server-b"]
            let destinations = pools.indices.map { "/dev/shm/" + TestSupport.uniqueName("provideo-fleet-\($0)", suffix: ".mov") }
            defer { for path in destinations { try? FileManager.default.removeItem(atPath: path) } }
            var inputs: [[UInt8]] = []
            for (index, pool) in pools.enumerated() {
                try FS.createPool(pool, capacity: "64M")
                let input = TestSupport.pattern(bytes, seed: UInt64(60 + index))
                let record = try FS.provideo(pool, "record", destinations[index], "--land", "background", stdin: Data(input))
                try #require(record.status == 0, "\(record.stderr)")
                inputs.append(input)
            }
            defer { for pool in pools { FS.destroyQuietly(pool) } }
            try body(scratch, pools, inputs, destinations)
        }
    }

    /// Starts `provideo land` for `pool` in the fleet of `slots` file, each transfer capped at 64 Mbit/s.
    static func lander(_ pool: String, fleet: String) throws -> Process {
        try TestSupport.start("provideo", ["--pool", pool, "land", "--fleet", fleet, "--slots", "1", "--rate", "64M"])
    }

    static func status(_ pool: String) throws -> (transferring: Bool, waitsForSlot: Bool) {
        let status = try TestSupport.poolStatus(pool)
        return (status.landing?.first?.transferring == true, status.landingWaitsForFleetSlot == true)
    }

    /// One slot: server B's lander waits, and says so in its pool's status, while A's transfer
    /// holds the slot; B transfers only once A's take has landed, and both land whole.
    @Test func oneSlotLandsTheServersInTurn() throws {
        try Self.landInTurn { scratch in scratch + "/fleet.slots" }
    }

    /// `oneSlotLandsTheServersInTurn` with the slots file at `fleetFile(scratch)` (a GlusterFS
    /// volume's, in GlusterLandingTests).
    static func landInTurn(_ name: String = #function, fleetFile: (String) -> String) throws {
        try Self.withTwoServers(bytes: 16 << 20, name) { scratch, pools, inputs, destinations in
            try Self.withLanders(pools, fleet: fleetFile(scratch)) { a, b in
                var sawWait = false
                while a.isRunning {
                    let other = try Self.status(pools[1])
                    sawWait = sawWait || other.waitsForSlot
                    // A lets go of the slot only once its take is published (then it removes the
                    // pool's copy and exits): B seen transferring means A's take had landed.
                    if other.transferring {
                        #expect(FileManager.default.fileExists(atPath: destinations[0]),
                                "server B transfers while A's take has not landed: both held the only slot")
                    }
                    usleep(20_000)
                }
                #expect(a.terminationStatus == 0)
                b.waitUntilExit()
                #expect(b.terminationStatus == 0)
                #expect(sawWait, "B's status never showed it waiting for the slot")
                for index in pools.indices {
                    #expect(TestSupport.fileHolds(destinations[index], inputs[index]), "\(destinations[index])")
                }
                #expect(try !Self.status(pools[1]).waitsForSlot)
            }
        }
    }

    /// A lander killed (SIGKILL) while it holds the only slot lets go of it with its process:
    /// the waiting server takes it and lands its take; the killed one's take stays in its pool,
    /// and lands whole on the next `land`.
    @Test func aKilledHoldersSlotGoesToTheNextServer() throws {
        try Self.killTheHolder { scratch in scratch + "/fleet.slots" }
    }

    /// `aKilledHoldersSlotGoesToTheNextServer` with the slots file at `fleetFile(scratch)`.
    static func killTheHolder(_ name: String = #function, fleetFile: (String) -> String) throws {
        try Self.withTwoServers(bytes: 32 << 20, name) { scratch, pools, inputs, destinations in
            let fleet = fleetFile(scratch)
            try Self.withLanders(pools, fleet: fleet) { a, b in
                while b.isRunning, try !Self.status(pools[1]).waitsForSlot { usleep(20_000) }
                guard a.isRunning else {
                    // A skip, not a pass: the 4 s transfer ended before B was seen waiting.
                    try Test.cancel("server A landed its take before server B was seen waiting: the kill was not tried")
                }
                kill(a.processIdentifier, SIGKILL)
                a.waitUntilExit()
                b.waitUntilExit()
                #expect(b.terminationStatus == 0)
                #expect(TestSupport.fileHolds(destinations[1], inputs[1]))
            }
            let again = try FS.provideo(pools[0], "land", "--fleet", fleet)
            #expect(again.status == 0, "\(again.stderr)")
            #expect(TestSupport.fileHolds(destinations[0], inputs[0]))
        }
    }

    /// Starts server A's lander, waits until its transfer runs (it holds the only slot), then
    /// starts B's; both are stopped and waited for after `body`, whatever happened.
    static func withLanders(_ pools: [String], fleet: String, _ body: (_ a: Process, _ b: Process) throws -> Void) throws {
        let a = try Self.lander(pools[0], fleet: fleet)
        defer { if a.isRunning { a.terminate() }; a.waitUntilExit() }
        while a.isRunning, try !Self.status(pools[0]).transferring { usleep(20_000) }
        let b = try Self.lander(pools[1], fleet: fleet)
        defer { if b.isRunning { b.terminate() }; b.waitUntilExit() }
        try body(a, b)
    }

    @Test func fleetOptionsAreChecked() throws {
        try FS.withScratchPool(capacity: "32M") { scratch, pool in
            let cases: [([String], String)] = [
                (["--slots", "2"], "give --fleet FILE too"),
                (["--fleet-rate", "1G"], "give --fleet FILE too"),
                (["--fleet", "relative.slots"], "absolute path"),
                (["--fleet", scratch + "/f", "--slots", "0"], "--slots takes a number more than 0"),
                (["--fleet", scratch + "/f", "--fleet-rate", "0"], "--fleet-rate must be more than 0"),
            ]
            for (arguments, said) in cases {
                let result = try TestSupport.run("provideo", ["--pool", pool, "land"] + arguments)
                #expect(result.status == 2 && result.stderr.contains(said), "\(arguments): \(result.stderr)")
            }
            let unopenable = try TestSupport.run("provideo", ["--pool", pool, "land", "--fleet", "/proc/provideo-fleet"])
            #expect(unopenable.status == 1 && unopenable.stderr.contains("/proc/provideo-fleet"), "\(unopenable.stderr)")
        }
    }
}

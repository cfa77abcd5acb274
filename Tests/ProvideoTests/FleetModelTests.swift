import Foundation
import TestSupport
import Testing

/// `Tools/fleet/model` (issue 43): its figures agree with what a take's landing must take when
/// worked out by hand, and it tells a store that keeps up from one that does not.
@Suite struct FleetModelTests {
    static let model = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Tools/fleet/model").path

    static func run(_ arguments: [String]) throws -> [String: Any] {
        let result = try TestSupport.run("/usr/bin/python3", [model, "--json"] + arguments)
        try #require(result.status == 0, "\(result.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
    }

    static func timeToLand(_ report: [String: Any]) -> (mean: Double, max: Double) {
        let times = report["timeToLandSeconds"] as? [String: Double] ?? [:]
        return (times["mean"] ?? -1, times["max"] ?? -1)
    }

    /// One 80 Mbit/s channel, 10 s takes (100 MB): copied at 100 MB/s (1 s), read back at
    /// 50 MB/s (2 s): every take lands in 3 s, and the backlog peaks at one take.
    @Test func aLoneTakeLandsInItsCopyAndCheckTime() throws {
        let report = try Self.run(["--servers", "1", "--channels", "1", "--bitrate", "80M", "--take", "10",
                                   "--duration", "100", "--store", "800M", "--read", "400M"])
        #expect(report["takes"] as? Int == 10 && report["landed"] as? Int == 10)
        let time = Self.timeToLand(report)
        #expect(abs(time.mean - 3) < 1e-6 && abs(time.max - 3) < 1e-6, "\(report)")
        #expect((report["backlogBytes"] as? [String: Double])?["peak"] == 100_000_000)
        #expect(report["backlogGrows"] as? Bool == false)
    }

    /// Two takes of 100 MB end together under a fleet rate of 160 Mbit/s (20 MB/s): with two
    /// slots each copies at half of it (10 s); with one slot they go in turn at all of it
    /// (5 s, then 5 more), the mean 7.5 s. The read-back at 100 Gbit/s adds 16 ms.
    @Test func theFleetRateIsSharedByTheSlotsHeld() throws {
        let common = ["--servers", "1", "--channels", "2", "--parallel", "2", "--bitrate", "80M", "--take", "10",
                      "--duration", "10", "--fleet-rate", "160M", "--store", "100G", "--read", "100G"]
        let shared = Self.timeToLand(try Self.run(common + ["--slots", "2"]))
        #expect(abs(shared.mean - 10.016) < 1e-6 && abs(shared.max - 10.016) < 1e-6, "\(shared)")
        let inTurn = Self.timeToLand(try Self.run(common + ["--slots", "1"]))
        #expect(abs(inTurn.mean - 7.512) < 1e-6 && abs(inTurn.max - 10.016) < 1e-6, "\(inTurn)")
    }

    /// A lander that sleeps `--interval` seconds between its passes (`land --watch`) sees a
    /// take at its next look: 1000 MB takes 100 s apart land in 30 s of copy and check, after
    /// a wait of less than 5 s (here 0.8 s, the phase its loop started at); with no interval,
    /// in the 30 s alone.
    @Test func aTakeWaitsForItsLandersNextLook() throws {
        let common = ["--servers", "1", "--channels", "1", "--bitrate", "80M", "--take", "100", "--duration", "1000",
                      "--store", "800M", "--read", "400M"]
        let at = Self.timeToLand(try Self.run(common))
        #expect(abs(at.mean - 30) < 1e-6 && abs(at.max - 30) < 1e-6, "\(at)")
        let report = try Self.run(common + ["--interval", "5"])
        #expect(report["landed"] as? Int == report["takes"] as? Int)
        let later = Self.timeToLand(report)
        #expect(later.mean > 30.001 && later.max < 35, "\(later)")
    }

    /// Three servers of two 30 Mbit/s channels, 20 s takes (75 MB): a cycle's six takes are
    /// 450 MB, 18 s at the fleet rate of 200 Mbit/s, so with two slots each take lands within
    /// its cycle (its lander's next look and a freed slot's try add at most a second each), and
    /// the backlog is never more than one cycle's takes. A model that let a freed slot's try
    /// wait for the next take to end fell behind for good here (issue 69).
    @Test func aFleetRateAboveTheRecordingKeepsEachCycleInItsTake() throws {
        let report = try Self.run(["--servers", "3", "--channels", "2", "--bitrate", "30M", "--take", "20",
                                   "--duration", "240", "--slots", "2", "--fleet-rate", "200M", "--interval", "1",
                                   "--store", "100G", "--read", "100G", "--seed", "99"])
        #expect(report["landed"] as? Int == 72, "\(report)")
        #expect(Self.timeToLand(report).max < 20, "\(report)")
        #expect(((report["backlogBytes"] as? [String: Double])?["peak"] ?? .infinity) <= 450_000_000, "\(report)")
        #expect(report["backlogGrows"] as? Bool == false, "\(report)")
    }

    /// Eight servers of two 147 Mbit/s channels (294 MB/s together): a store of 2 Gbit/s
    /// (250 MB/s) falls behind for good; one of 8 Gbit/s keeps the backlog to the takes just ended.
    @Test func aStoreSlowerThanTheFleetFallsBehind() throws {
        let fleet = ["--servers", "8", "--channels", "2", "--bitrate", "147M", "--take", "60", "--duration", "1800",
                     "--slots", "8"]
        let slow = try Self.run(fleet + ["--store", "2G"])
        #expect(slow["backlogGrows"] as? Bool == true, "\(slow)")
        let fast = try Self.run(fleet + ["--store", "8G"])
        #expect(fast["backlogGrows"] as? Bool == false, "\(fast)")
        #expect(Self.timeToLand(fast).max < 60, "\(fast)")
    }

    /// `--answer` is what a store is bought by: it says the fleets the model was checked on
    /// against real runs, and so where its table is the model's word alone (issue 69).
    @Test func theAnswerSaysWhereTheModelWasChecked() throws {
        let answer = try Self.run(["--answer", "--servers", "2", "--channels", "1", "--bitrate", "20M", "--take", "10",
                                   "--duration", "60"])
        let checked = answer["checked"] as? String ?? ""
        #expect(checked.contains("2-6 servers x 1-3 channels") && checked.contains("1-3 slots")
                && checked.contains("within 20 %"), "\(checked)")
        let text = try TestSupport.run("/usr/bin/python3", [Self.model, "--answer", "--servers", "2", "--channels", "1",
                                                            "--bitrate", "20M", "--take", "10", "--duration", "60"])
        #expect(text.status == 0 && text.stdout.hasSuffix(checked + "\n"), "\(text.stdout)")
    }

    @Test func badParametersAreUsageErrors() throws {
        for arguments in [["--bitrate", "0"], ["--slots", "0"], ["--store", "fast"], ["--svg", "/tmp/x.svg"],
                          ["--interval", "-1"]] {
            let result = try TestSupport.run("/usr/bin/python3", [Self.model] + arguments)
            #expect(result.status == 2, "\(arguments): \(result.stderr)")
        }
    }
}

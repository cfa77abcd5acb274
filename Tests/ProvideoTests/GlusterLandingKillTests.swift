import Foundation
import Glibc
import TestSupport
import Testing
import ProVideoStorage

/// A 2 GiB take landing on GlusterFS while `provideo land` is killed with SIGKILL three times,
/// at random points spread over the transfer: each run resumes where the last one stopped, the
/// pool keeps the take's space until the take is published, `check` passes after every kill,
/// and the take lands byte-identical.
@Suite(.serialized, .enabled(if: GlusterVolume.unavailableReason == nil,
                             Comment(rawValue: GlusterVolume.unavailableReason ?? "")),
       .enabled(if: LongTests.skipReason == nil, Comment(rawValue: LongTests.skipReason ?? "")))
struct GlusterLandingKillTests {
    static let length: Int64 = 2 << 30

    @Test func aTwoGiBTakeLandsThroughThreeKills() throws {
        try GlusterLandingTests.withPoolAndVolume("2100M") { pool, takes in
            let scratch = (pool as NSString).deletingLastPathComponent
            let input = scratch + "/input", destination = takes + "/big.mov"
            try TestSupport.shell("head -c \(Self.length) /dev/urandom > '\(input)'")
            let expected = try TestSupport.sha256sum(input)
            let record = try TestSupport.run("/bin/sh", ["-c", "'\(TestSupport.provideoPath)' --pool '\(pool)' record "
                                                         + "'\(destination)' --land background < '\(input)'"])
            try #require(record.status == 0, "\(record.stderr)")
            try FileManager.default.removeItem(atPath: input)
            let held = try TestSupport.poolStatus(pool)
            #expect(held.landingBytes == Self.length)

            var landedBefore: Int64 = 0
            // Kill points: a random fraction of the take landed, in three spread-out windows.
            let windows: [ClosedRange<Double>] = [0.05...0.3, 0.35...0.65, 0.7...0.95]
            for (round, window) in windows.enumerated() {
                let point = Int64(Double(Self.length) * Double.random(in: window))
                let lander = try TestSupport.start("provideo", ["--pool", pool, "land"])
                let deadline = Date(timeIntervalSinceNow: 300)
                while lander.isRunning && Date() < deadline,
                      (try TestSupport.poolStatus(pool).landing?.first?.landedBytes ?? 0) < point {
                    usleep(50_000)
                }
                usleep(UInt32.random(in: 0...300_000))
                try #require(lander.isRunning, "land finished before kill \(round + 1)")
                kill(lander.processIdentifier, SIGKILL)
                lander.waitUntilExit()
                #expect(lander.terminationReason == .uncaughtSignal)

                let check = try FS.provideo(pool, "check")
                #expect(check.status == 0, "check after kill \(round + 1): \(check.stdout)")
                let status = try TestSupport.poolStatus(pool)
                let progress = try #require(status.landing?.first, "the take is no longer landing after kill \(round + 1)")
                #expect(progress.landedBytes >= landedBefore, "kill \(round + 1) lost flushed chunks")
                #expect(progress.landedBytes >= point - (8 << 20), "kill \(round + 1) came before its point")
                landedBefore = progress.landedBytes
                #expect(status.remainingCapacity == held.remainingCapacity, "space came back before the take landed")
                #expect(!FileManager.default.fileExists(atPath: destination), "published before it was verified")
            }
            let land = try FS.provideo(pool, "land")
            #expect(land.status == 0, "\(land.stderr)")
            #expect(try TestSupport.sha256sum(destination) == expected)
            #expect(CrashKit.contents(takes) == ["big.mov"])
            let after = try TestSupport.poolStatus(pool)
            #expect(after.landing == [])
            #expect(after.remainingCapacity == after.initialCapacity)
            #expect(try FS.provideo(pool, "check").status == 0)
        }
    }
}

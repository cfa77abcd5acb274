import Foundation
import Glibc
import TestSupport
import Testing

/// `land --fleet FILE --fleet-rate R` end to end (issue 69): two servers' landers, two processes
/// with a pool each, share R between the slots held, so together they write at most R to the
/// store, measured there: bytes at each server's destination over time.
@Suite(.enabled(if: FileManager.default.fileExists(atPath: "/dev/shm"), "no /dev/shm (tmpfs) on this machine"))
struct FleetRateShareTests {
    /// 160 Mbit/s for the fleet: 20 MB/s, 10 MB/s each while both hold a slot.
    static let fleetRate = 20_000_000.0

    /// One sample of the store: when, and bytes at server A's and B's destination directory.
    struct Sample {
        var at: Double
        var bytes: [Int64]
    }

    /// Bytes in the files of `directory` (the transfer's hidden temporary, then the take), each
    /// file once however many names it has: where a store has no `RENAME_NOREPLACE`, a publish
    /// links the temporary to the take's name before it removes the temporary.
    static func bytes(in directory: String) -> Int64 {
        var seen = Set<UInt64>(), total: Int64 = 0
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
            var facts = stat()
            if lstat(directory + "/" + name, &facts) == 0, seen.insert(UInt64(facts.st_ino)).inserted {
                total += Int64(facts.st_size)
            }
        }
        return total
    }

    /// Three slots, two holders, each counting its own slot among the held: from just over a
    /// second after B's first byte (A's share is probed at most once a second) until either
    /// has copied its take, each writes at most R ÷ 2 and the two together at most R, with 10 %
    /// for the 1 MiB read each transfer makes before its pacing sleeps.
    @Test func twoLandersTogetherStayWithinTheFleetRate() throws {
        try TestSupport.withScratchOnAnotherFilesystem { store in
            try Self.landTwoWithinTheRate(store: store, measuredAt: store) { scratch in scratch + "/fleet.slots" }
        }
    }

    /// `twoLandersTogetherStayWithinTheFleetRate` with the takes landing in `store` and the
    /// slots file at `fleetFile(scratch)`; the bytes landed are counted in `measuredAt`, where
    /// the store keeps `store`'s files (a GlusterFS brick's directory, in GlusterLandingTests:
    /// a client's sizes are as old as its attribute cache).
    static func landTwoWithinTheRate(_ name: String = #function, store: String, measuredAt: String,
                                     fleetFile: (String) -> String) throws {
        try TestSupport.withScratch(name) { scratch in
            let lengths = [64_000_000, 48_000_000]
            let pools = [scratch + "/server-a", scratch + "/server-b"]
            let directories = [store + "/a", store + "/b"]
            let measured = [measuredAt + "/a", measuredAt + "/b"]
            var inputs: [[UInt8]] = []
            defer { for pool in pools { FS.destroyQuietly(pool) } }
            for index in pools.indices {
                try FileManager.default.createDirectory(atPath: directories[index], withIntermediateDirectories: true)
                try FS.createPool(pools[index], capacity: "96M")
                let input = TestSupport.pattern(lengths[index], seed: UInt64(690 + index))
                let record = try FS.provideo(pools[index], "record", directories[index] + "/take.mov",
                                             "--land", "background", stdin: Data(input))
                try #require(record.status == 0, "\(record.stderr)")
                inputs.append(input)
            }
            let arguments = ["land", "--fleet", fleetFile(scratch), "--slots", "3", "--fleet-rate", "160M"]
            let a = try TestSupport.start("provideo", ["--pool", pools[0]] + arguments)
            defer { if a.isRunning { a.terminate() }; a.waitUntilExit() }
            while a.isRunning, Self.bytes(in: measured[0]) == 0 { usleep(10_000) }
            let b = try TestSupport.start("provideo", ["--pool", pools[1]] + arguments)
            defer { if b.isRunning { b.terminate() }; b.waitUntilExit() }
            var samples: [Sample] = []
            while a.isRunning || b.isRunning {
                samples.append(Sample(at: StatusLog.now, bytes: measured.map(Self.bytes(in:))))
                usleep(20_000)
            }
            #expect(a.terminationStatus == 0 && b.terminationStatus == 0)
            for index in pools.indices {
                #expect(TestSupport.fileHolds(directories[index] + "/take.mov", inputs[index]))
            }

            // Both copying, each at its share: from just over a second after B's first byte
            // to the last sample before either had its whole take.
            guard let bStarted = samples.first(where: { $0.bytes[1] > 0 })?.at,
                  let first = samples.firstIndex(where: { $0.at >= bStarted + 1.2 }),
                  let done = samples.firstIndex(where: { zip($0.bytes, lengths).contains { $0 >= Int64($1) } }),
                  done - 1 > first, samples[done - 1].at - samples[first].at >= 1 else {
                try Test.cancel("the two transfers copied together for less than a second: no window to measure")
            }
            let (start, end) = (samples[first], samples[done - 1])
            let seconds = end.at - start.at
            let each = zip(end.bytes, start.bytes).map { Double($0 - $1) / seconds }
            let together = each.reduce(0, +)
            #expect(together <= Self.fleetRate * 1.1,
                    "\(together / 1e6) MB/s together over \(seconds) s for a fleet rate of 20 MB/s")
            for (index, rate) in each.enumerated() {
                #expect(rate > 0 && rate <= Self.fleetRate / 2 * 1.1,
                        "server \(index): \(rate / 1e6) MB/s over \(seconds) s for a share of 10 MB/s")
            }
        }
    }
}

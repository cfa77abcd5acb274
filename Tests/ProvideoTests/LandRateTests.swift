import Foundation
import Glibc
import TestSupport
import Testing

/// `land --rate`: the rate `status` shows for a capped transfer (and the time left worked out
/// from it) is the rate sustained since the transfer started, never above the cap: one chunk's
/// catch-up burst showed 62 to 207 MB/s for a 50 MB/s transfer.
@Suite struct LandRateTests {
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/dev/shm"), "no /dev/shm (tmpfs) on this machine"))
    func theRateShownIsTheSustainedOne() throws {
        try FS.withScratchPool(capacity: "64M") { _, pool in
            let destination = "/dev/shm/" + TestSupport.uniqueName("provideo-test-land-rate", suffix: ".mov")
            defer { try? FileManager.default.removeItem(atPath: destination) }
            let input = TestSupport.pattern(48_000_000, seed: 2)
            let record = try FS.provideo(pool, "record", destination, "--land", "background", stdin: Data(input))
            #expect(record.status == 0, "\(record.stderr)")
            // 200 Mbit/s: 25 MB/s, about 2 s for the take.
            let cap = 25_000_000.0
            let land = try TestSupport.start("provideo", ["--pool", pool, "land", "--rate", "200M"])
            defer { if land.isRunning { land.terminate() }; land.waitUntilExit() }
            var shown: [(rate: Double, eta: Double, left: Int64)] = []
            while land.isRunning {
                if let progress = (try? TestSupport.poolStatus(pool))?.landing?.first, progress.transferring == true,
                   let rate = progress.bytesPerSecond, let eta = progress.etaSeconds {
                    shown.append((rate, eta, progress.length - progress.landedBytes))
                }
                usleep(50_000)
            }
            land.waitUntilExit()
            #expect(land.terminationStatus == 0)
            #expect(TestSupport.fileHolds(destination, input))
            #expect(!shown.isEmpty, "no transfer seen in status")
            for sample in shown {
                // The pacing keeps every byte at or after its due time, so the attempt's
                // average cannot pass the cap (1% for the clock reads in between).
                #expect(sample.rate <= cap * 1.01, "\(sample.rate / 1e6) MB/s shown for a cap of 25 MB/s")
                #expect(abs(sample.eta - Double(sample.left) / sample.rate) < 1e-6)
            }
        }
    }
}

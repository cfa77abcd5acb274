import CommandLineSupport
import Foundation
import ProVideoStorage
import Testing

/// The first second's rate is said with the sustained one, and when it is the lower of the two
/// the line says why (issue 41 item 6: "sustained 26.8 Gbit/s (burst 21.2 Gbit/s)").
@Suite struct BurstTextTests {
    /// A measurement as `provideo calibrate --json` and `pool.json` hold one.
    static func measurement(burst: Int64, sustained: Int64) throws -> BandwidthMeasurement {
        let json = #"{"burst": \#(burst), "sustained": \#(sustained), "settled": true, "bytes": 1073741824, "#
            + #""seconds": 20, "commitInterval": 1000000000}"#
        return try JSONDecoder().decode(BandwidthMeasurement.self, from: Data(json.utf8))
    }

    @Test func aBurstAboveTheSustainedRateIsTheWriteCache() throws {
        #expect(try Self.measurement(burst: 30_000_000_000, sustained: 26_800_000_000).burstText
                == "burst 30 Gbit/s in the first second")
    }

    @Test func aBurstBelowTheSustainedRateSaysSo() throws {
        #expect(try Self.measurement(burst: 21_200_000_000, sustained: 26_800_000_000).burstText
                == "burst 21.2 Gbit/s in the first second, below the sustained rate: the device's write cache gave no head start")
    }
}

@testable import BenchKit
import Testing

/// The hypervisor's steal, as a sizing trial reports it.
@Suite struct CPUStealTests {
    /// /proc/stat's first line gives the steal column and the total; the share is their
    /// growth's ratio, nil when no tick passed or the counters went back.
    @Test func cpuStealIsTheStealColumnsShare() throws {
        let before = try #require(CPUSteal.parse("cpu  3249173 135 1694927 5586477 1091023 0 37123 349410 0 0"))
        #expect(before.stolen == 349_410 && before.total == 3_249_173 + 135 + 1_694_927 + 5_586_477 + 1_091_023 + 37_123 + 349_410)
        let after = CPUSteal(stolen: before.stolen + 1_399, total: before.total + 12_000)
        #expect(after.share(since: before) == 1_399.0 / 12_000)
        #expect(before.share(since: before) == nil && before.share(since: after) == nil)
        #expect(CPUSteal.parse("cpu0 1 2 3 4 5 6 7 8") == nil && CPUSteal.parse("cpu 1 2 3") == nil)
        #expect(CPUSteal.read() != nil, "this kernel has /proc/stat with a steal column")
    }
}

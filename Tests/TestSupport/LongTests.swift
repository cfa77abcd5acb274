import Foundation

/// The long tier: tests whose point is their size (a 2 GiB take through GlusterFS's FUSE
/// client), run by `.ci/run` as a step of their own after the suite, with
/// `PROVIDEO_LONG_TESTS=1`. Apart from the suite they neither set its wall time nor take its
/// cores; under `.ci/run --stress` they are left out, since beside a CPU hog on every core the
/// FUSE client and the brick's daemon crawl (the 2 GiB landing through three kills ran past
/// 25 minutes, landing at 2.6 MB/s; Docs/TESTING.md).
package enum LongTests {
    package static let variable = "PROVIDEO_LONG_TESTS"

    /// Why a long test is skipped (nil when the long tier runs).
    package static let skipReason: String? =
        ProcessInfo.processInfo.environment[variable] == "1" ? nil
            : "a long test: `.ci/run` runs it after the suite (\(variable)=1)"
}

import TestSupport
import Testing

/// Every crash-safety test that runs `provideo` processes (kill points, kill -9 of a recorder,
/// the start race, injected faults). One at a time: the nested suites in the other Crash*
/// files extend this serialized parent, so their processes and timings never overlap.
@Suite(.serialized) struct CrashTests {}

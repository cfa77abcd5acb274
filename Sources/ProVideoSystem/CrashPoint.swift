import FoundationEssentials
import Glibc

/// Named steps inside the library's operations where tests kill the process to prove crash
/// consistency: with `PROVIDEO_CRASH_AT=<name>` in the environment, reaching that step sends
/// SIGKILL to the process itself, as a power cut or `kill -9` would. Only in debug builds,
/// which the tests use: a release build has no crash points, and its binaries do not even
/// contain the variable's name.
package enum CrashPoint {
    #if DEBUG
    private static let target = ProcessInfo.processInfo.environment["PROVIDEO_CRASH_AT"]
    #endif

    @inline(__always)
    package static func hit(_ name: StaticString) {
        #if DEBUG
        guard let target, target == "\(name)" else { return }
        ProcessIdentity.killImmediately()
        #endif
    }
}

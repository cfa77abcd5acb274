import Foundation
import Glibc

/// Named steps inside pool operations where tests kill the process to prove crash
/// consistency: with `PROVIDEO_CRASH_AT=<name>` in the environment, reaching that step sends
/// SIGKILL to the process itself, as a power cut or `kill -9` would. Without it, a no-op.
enum CrashPoint {
    private static let target = ProcessInfo.processInfo.environment["PROVIDEO_CRASH_AT"]

    static func hit(_ name: StaticString) {
        guard let target, target == "\(name)" else { return }
        kill(getpid(), SIGKILL)
    }
}

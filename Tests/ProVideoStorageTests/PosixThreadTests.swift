import Foundation
import Glibc
import ProVideoSystem
import Synchronization
import Testing

/// The library's helper threads are pthreads named for `top -H` and `perf` (15 bytes, the
/// kernel's limit), where Foundation's `Thread` named them before.
struct PosixThreadTests {
    /// The calling thread's name, as the kernel keeps it.
    private static func ownName() -> String {
        ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "").trimmingCharacters(in: .newlines)
    }

    @Test func aDetachedThreadRunsItsBodyUnderItsName() throws {
        let seen = Mutex<String?>(nil)
        try DetachedThread.start(name: "provideo-granter-and-more") { seen.withLock { $0 = Self.ownName() } }
        // Nothing to join: polled, with a guard against a hang (not a timing bound: a thread
        // that has not run in two minutes has failed to start).
        for _ in 0..<120_000 where seen.withLock({ $0 }) == nil { usleep(1_000) }
        #expect(seen.withLock { $0 } == "provideo-grante")
    }

    @Test func aJoinedThreadHasEndedWhenJoinReturns() throws {
        let seen = Mutex<String?>(nil)
        let thread = try JoinedThread(name: "provideo-land") { seen.withLock { $0 = Self.ownName() } }
        thread.join()
        #expect(seen.withLock { $0 } == "provideo-land")
    }
}

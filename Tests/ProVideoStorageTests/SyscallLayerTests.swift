import Foundation
import Testing
@testable import ProVideoStorage

/// Every call into the system goes through one layer, the module `Sources/ProVideoSystem/`
/// (issue 10, issue 40): a thin wrapper per call that turns errno into a `ProVideoError`. Outside it, no
/// file calls a C shim function (`pv_…`), `Glibc.…`, or one of the system calls the library
/// makes.
@Suite struct SyscallLayerTests {
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources")

    static let systemCalls = ["open", "close", "unlink", "rename", "renameat2", "mkdir", "rmdir", "fsync", "fdatasync",
                              "pwrite", "pread", "fallocate", "ftruncate", "fchmod", "fchown", "chmod", "chown", "stat",
                              "lstat", "fstat", "statx", "statvfs", "statfs", "access", "realpath", "getpid", "geteuid",
                              "kill", "umask", "mmap", "munmap", "madvise", "getcwd", "sysconf", "clock_gettime",
                              "usleep", "nanosleep", "strerror", "ioctl", "fcntl", "getgrnam_r", "getpwuid_r"]

    /// The library's modules, lowest last.
    static let libraryModules = ["ProVideoStorage", "ProVideoIO", "ProVideoJournal", "ProVideoSystem"]

    /// "file:line: code" of every direct call in the library's files (paths under `Sources/`:
    /// `ProVideoStorage/…`, `ProVideoSystem/…`, …) that `scanned` selects.
    static func directCalls(in scanned: (String) -> Bool) throws -> [String] {
        let pattern = try NSRegularExpression(pattern:
            // A declaration, or a labelled first argument (`open(at:)`), is one of our own methods.
            #"(?<![\w.])(?<!func )(pv_\w+|Glibc\.\w+|"# + systemCalls.joined(separator: "|") + #")\((?!\w+:)"#)
        var found: [String] = []
        let files = Self.libraryModules.flatMap { module in
            FileManager.default.enumerator(atPath: sources.path + "/" + module)!.compactMap { $0 as? String }.map { module + "/" + $0 }
        }
        #expect(files.count > 80)
        for file in files where file.hasSuffix(".swift") && scanned(file) {
            let text = try String(contentsOfFile: sources.path + "/" + file, encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                // Code only: string literals and comments name calls without making them.
                let code = line.replacingOccurrences(of: #""[^"]*""#, with: "\"\"", options: .regularExpression)
                    .components(separatedBy: "//").first ?? ""
                let range = NSRange(code.startIndex..., in: code)
                if pattern.firstMatch(in: code, range: range) != nil { found.append("\(file):\(number + 1): \(line)") }
            }
        }
        return found
    }

    @Test func noSystemCallOutsideTheLayer() throws {
        let calls = try Self.directCalls { !$0.hasPrefix("ProVideoSystem/") }
        #expect(calls.isEmpty, "direct system calls outside ProVideoSystem/:\n\(calls.joined(separator: "\n"))")
    }

    /// Every bounded wait in the library runs on `CLOCK_MONOTONIC` (issue 25, item 5): none is
    /// bounded by a `Date` (`NSCondition.wait(until:)`, `NSLock.lock(before:)`, a deadline
    /// `Date(timeIntervalSinceNow:)`), which an NTP step stretches or cuts short.
    @Test func noWaitIsBoundedOnTheWallClock() throws {
        var found: [String] = []
        let files = Self.libraryModules.flatMap { module in
            FileManager.default.enumerator(atPath: Self.sources.path + "/" + module)!.compactMap { $0 as? String }.map { module + "/" + $0 }
        }
        for file in files where file.hasSuffix(".swift") {
            let text = try String(contentsOfFile: Self.sources.path + "/" + file, encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = line.components(separatedBy: "//").first ?? ""
                for pattern in ["Date(timeIntervalSinceNow", "lock(before:", "wait(until: Date", "DispatchTime.now"]
                where code.contains(pattern) {
                    found.append("\(file):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
        #expect(found.isEmpty, "waits bounded on the wall clock:\n\(found.joined(separator: "\n"))")
    }

    /// Nothing below reaches up (issue 26): no file of the syscall layer (`ProVideoSystem`) or of the
    /// write engines (`ProVideoIO`) names a pool, a capture, a reserve or a recording, in code,
    /// strings or comments; they serve the library without knowing it.
    @Test func theLowerLayersKnowNoPool() throws {
        var found: [String] = []
        for folder in ["ProVideoSystem", "ProVideoIO"] {
            let directory = Self.sources.path + "/" + folder
            for file in try FileManager.default.contentsOfDirectory(atPath: directory) where file.hasSuffix(".swift") {
                let text = try String(contentsOfFile: directory + "/" + file, encoding: .utf8)
                for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    let words = line.lowercased().replacingOccurrences(of: "reservecapacity", with: "")
                    if ["pool", "capture", "reserve", "recording", "recorder"].contains(where: words.contains) {
                        found.append("\(folder)/\(file):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
                    }
                }
            }
        }
        #expect(found.isEmpty, "lower layers that know the pool:\n\(found.joined(separator: "\n"))")
    }

    /// The tools reach the system through the library (`StopSignals`, `OpenFlags`), not the C
    /// shim: neither `Tools/provideo` nor `Tools/BenchKit` imports `CProVideo`.
    @Test func theToolsDoNotImportTheShim() throws {
        let tools = Self.sources.deletingLastPathComponent().appendingPathComponent("Tools")
        var found: [String] = []
        for folder in ["provideo", "BenchKit", "provideo-bench", "CommandLineSupport"] {
            let directory = tools.path + "/" + folder
            for file in try FileManager.default.contentsOfDirectory(atPath: directory) where file.hasSuffix(".swift") {
                let text = try String(contentsOfFile: directory + "/" + file, encoding: .utf8)
                if text.split(separator: "\n").contains(where: { $0.hasPrefix("import CProVideo") }) {
                    found.append("\(folder)/\(file)")
                }
            }
        }
        #expect(found.isEmpty, "tools importing the C shim: \(found)")
    }

    /// A monotonic wait times out at its deadline and wakes early when signalled.
    @Test func aMonotonicWaitEndsAtItsDeadline() {
        let condition = MonotonicCondition()
        condition.lock()
        let started = MonotonicTime.now()
        while condition.wait(until: started + 50_000_000) {}
        let waited = MonotonicTime.now() - started
        condition.unlock()
        #expect(waited >= 50_000_000, "woke after \(waited) ns, before the deadline")
        condition.lock()
        #expect(!condition.wait(until: MonotonicTime.now() - 1), "a deadline already passed must not wait")
        condition.unlock()
    }

    /// The scan finds what it looks for: the layer itself is full of such calls.
    @Test func theScanSeesCallsInTheLayer() throws {
        let calls = try Self.directCalls { $0.hasPrefix("ProVideoSystem/") }
        #expect(calls.contains { $0.hasPrefix("ProVideoSystem/FileDescriptor.swift:") && $0.contains("fchmod(") })
        #expect(calls.contains { $0.hasPrefix("ProVideoSystem/IOURing.swift:") && $0.contains("pv_ring_submit(") })
    }
}

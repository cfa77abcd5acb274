import Foundation
import Glibc
import TestSupport
import Testing

/// `land` shows its transfer as a progress line on standard error, as copies and zero-fills do
/// (`ProgressLine`): redrawn in place on a terminal, a line every 5 s in a log.
@Suite struct LandProgressTests {
    private static let hasScript = FileManager.default.isExecutableFile(atPath: "/usr/bin/script")

    /// Runs `body` with a pool holding a take of `length` bytes waiting to land on /dev/shm.
    private func withWaitingTake(_ length: Int, _ body: (_ pool: String, _ destination: String) throws -> Void) throws {
        try FS.withScratchPool(capacity: "48M") { _, pool in
            let destination = "/dev/shm/" + TestSupport.uniqueName("provideo-test-land-progress", suffix: ".mov")
            defer { try? FileManager.default.removeItem(atPath: destination) }
            let record = try FS.provideo(pool, "record", destination, "--land", "background",
                                         stdin: Data(TestSupport.pattern(length, seed: 9)))
            try #require(record.status == 0, "\(record.stderr)")
            try body(pool, destination)
        }
    }

    /// On a terminal (a pty from util-linux `script`): the line redrawn while copying, its final
    /// figure, then the read-back's.
    @Test(.enabled(if: hasScript && FileManager.default.fileExists(atPath: "/dev/shm"), "needs util-linux script and /dev/shm"))
    func aTerminalSeesTheLineRedrawn() throws {
        try withWaitingTake(20 << 20) { pool, destination in
            // 80 Mbit/s: 10 MB/s, about 2 s: several redraws.
            let command = "\(TestSupport.provideoPath) --pool \(pool) land --rate 80M"
            let result = try TestSupport.run("/usr/bin/script", ["-q", "-e", "-c", command, "/dev/null"], stdin: Data())
            #expect(result.status == 0, "\(result.stdout)")
            let redraws = result.stdout.components(separatedBy: "\r\u{1B}[K").dropFirst()
            let copying = redraws.filter { $0.hasPrefix("landing \(destination): ") }
            #expect(copying.count >= 3, "\(result.stdout)")
            #expect(copying.contains { $0.range(of: #"^landing \S+: \d+% \([^)]+ of 20\.0 MiB\), \d+ MB/s, 0:00:0\d left$"#,
                                               options: .regularExpression) != nil }, "\(copying)")
            #expect(copying.last?.hasPrefix("landing \(destination): 100% (20.0 MiB of 20.0 MiB), ") == true, "\(copying)")
            #expect(redraws.last?.hasPrefix("verifying \(destination): 100% (20.0 MiB of 20.0 MiB)") == true, "\(redraws)")
            #expect(result.stdout.hasSuffix("landed 20.0 MiB (20971520 bytes) at \(destination)\r\n"), "\(result.stdout)")
        }
    }

    /// In a log (standard error a pipe): a line every 5 s, and the final one. Progress never
    /// goes back; a periodic line may say 100 % when the copy is done and its flush or
    /// verification outlasts the 5 s (a loaded machine: "37 %, 100 %, 100 %"), but none before
    /// the copy is whole.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/dev/shm"), "no /dev/shm (tmpfs) on this machine"))
    func aLogGetsALineEveryFewSeconds() throws {
        try withWaitingTake(24 << 20) { pool, destination in
            // 32 Mbit/s: 4 MB/s, about 6 s: one line at 5 s, then the final one.
            let result = try FS.provideo(pool, "land", "--rate", "32M")
            #expect(result.status == 0, "\(result.stderr)")
            let lines = result.stderr.split(separator: "\n").filter { $0.hasPrefix("landing \(destination): ") }
            #expect(!result.stderr.contains("\r"))
            #expect(lines.count >= 2, "\(result.stderr)")
            #expect(lines.last?.hasPrefix("landing \(destination): 100% (24.0 MiB of 24.0 MiB), ") == true, "\(lines)")
            let percents = lines.compactMap { line in
                line.firstMatch(of: #/: (\d+)% \(/#).flatMap { Int($0.output.1) }
            }
            #expect(percents.count == lines.count && percents == percents.sorted() && percents.first.map { $0 < 100 } == true,
                    "\(lines)")
        }
    }
}

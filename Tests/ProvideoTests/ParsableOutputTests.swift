import Foundation
import TestSupport
import Testing

/// `status -Hp` and `list -Hp`: rows for scripts as `zpool list -Hp` prints them (tabs, no
/// header, exact numbers), matching `--json`.
@Suite struct ParsableOutputTests {
    private func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text)")
    }

    private func rows(_ text: String) -> [[String]] {
        text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            .map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
    }

    @Test func statusIsOneRowOfExactFields() throws {
        try FS.withScratchPool(capacity: "100M") { _, pool in
            #expect(try FS.provideo(pool, "set-bandwidth", "1G").status == 0)
            let status = try json(try FS.provideo(pool, "status", "--json").stdout)
            let result = try FS.provideo(pool, "status", "-Hp", "--bitrate", "8M")
            #expect(result.status == 0 && result.stderr.isEmpty, "\(result.stderr)")
            // 100 MiB at 8 Mbit/s: 104.8576 s, whole seconds rounded down.
            #expect(rows(result.stdout) == [[pool, "104857600", "\(status["remainingCapacity"] as? Int64 ?? -1)",
                                             "\(status["reservedBytesOnDisk"] as? Int64 ?? -1)", "-", "0", "0", "800000000", "no",
                                             status["filesystem"] as? String ?? "?", status["engine"] as? String ?? "?",
                                             "104"]], "\(result.stdout)")
            // Separate flags in any order give the same; -H alone keeps the rounded sizes.
            #expect(try FS.provideo(pool, "status", "-p", "--bitrate", "8M", "-H").stdout == result.stdout)
            #expect(rows(try FS.provideo(pool, "status", "-H").stdout).first?[1] == "100 MiB")
            // -p alone: the header, and columns aligned under it.
            let table = try FS.provideo(pool, "status", "-p").stdout.split(separator: "\n").map(String.init)
            #expect(table.count == 2 && table[0].hasPrefix("PATH ") && table[0].hasSuffix("FILESYSTEM  ENGINE"), "\(table)")
            let capacity = try #require(table[0].range(of: "CAPACITY")).lowerBound.utf16Offset(in: table[0])
            #expect(table[1].dropFirst(capacity).hasPrefix("104857600 "), "\(table)")
            let refused = try FS.provideo(pool, "status", "-Hp", "--json")
            #expect(refused.status == 2 && refused.stderr.hasPrefix("provideo: -H and -p print one table"), "\(refused.stderr)")
        }
    }

    /// A running capture whose destination has a tab in its name (escaped as `\t`, so the row
    /// keeps five fields) and a recording the pool holds.
    @Test func listIsOneRowPerItem() throws {
        try FS.withScratchPool(capacity: "32M") { dir, pool in
            let held = try FS.startRecorder(pool, dir + "/take.mov")
            try held.input.write(contentsOf: Data(TestSupport.pattern(100_000, seed: 9)))
            #expect(FileManager.default.createFile(atPath: dir + "/take.mov", contents: Data("someone else's".utf8)))
            try held.input.close()
            held.process.waitUntilExit()

            let (recorder, input) = try FS.startRecorder(pool, dir + "/take\tb.mov")
            defer { try? input.close(); recorder.waitUntilExit() }
            try input.write(contentsOf: Data(TestSupport.pattern(2_000_000, seed: 4)))
            var listing = try TestSupport.poolListing(pool)
            for _ in 0..<100 where listing.captures.first.map({ $0.committedBytes < 2_000_000 }) ?? true {
                usleep(50_000)
                listing = try TestSupport.poolListing(pool)
            }
            let result = try FS.provideo(pool, "list", "-Hp")
            #expect(result.status == 0, "\(result.stderr)")
            let capture = try #require(listing.captures.first)
            let recording = try #require(listing.recordings.first)
            #expect(rows(result.stdout) == [
                ["capture", capture.id, dir + "/take\\tb.mov", "\(capture.bytesWritten)", "2000000"],
                ["held", recording.path, dir + "/take.mov", "100000", "-"],
            ], "\(result.stdout)")
            let table = try FS.provideo(pool, "list").stdout
            #expect(!table.hasPrefix("TYPE"))  // the human view without -H or -p
            #expect(try FS.provideo(pool, "list", "-p").stdout.hasPrefix("TYPE  "))
        }
    }
}

import Foundation
import TestSupport
import Testing

/// `status`: recording time left at a bitrate or a codec's rate, three significant digits and
/// byte counts on request, run as a process against a real pool.
@Suite struct StatusCommandTests {
    private func withPool(_ name: String = #function, _ body: (String) throws -> Void) throws {
        try FS.withScratchPool("status-\(name)", capacity: "100M") { _, pool in try body(pool) }
    }

    private func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test func timeLeftAtACodecsRate() throws {
        try withPool { pool in
            let result = try FS.provideo(pool, "status", "--codec", "prores-422-hq-2160p30", "--json")
            #expect(result.status == 0, "\(result.stderr)")
            let object = try json(result.stdout)
            let remaining = try #require(object["remainingCapacity"] as? Int64)
            let time = try #require(object["recordingTime"] as? [String: Any])
            #expect(time["codec"] as? String == "prores-422-hq-2160p30")
            #expect(time["bitrate"] as? Int64 == 885_000_000)
            let seconds = try #require(time["seconds"] as? Double)
            #expect(abs(seconds - Double(remaining) * 8 / 885e6) < 1e-9)
            let human = try FS.provideo(pool, "status", "--codec", "prores-422-hq-2160p30").stdout
            #expect(human.contains("\ntime left   0.9 s at 885 Mbit/s (prores-422-hq-2160p30)\n"), "\(human)")
        }
    }

    @Test func timeLeftAtABitrate() throws {
        try withPool { pool in
            let human = try FS.provideo(pool, "status", "--bitrate", "8M", "--bytes")
            #expect(human.status == 0)
            // 100 MiB at 8 Mbit/s: 104857600 bytes = 104.8576 s.
            #expect(human.stdout.contains("\ntime left   0:01:44 at 8 Mbit/s\n"), "\(human.stdout)")
            #expect(human.stdout.contains("\ncapacity    100 MiB (104857600 bytes)\n"), "\(human.stdout)")
            let unknown = try FS.provideo(pool, "status", "--bitrate", "0")
            #expect(unknown.stdout.contains("\ntime left   unknown (no bitrate)\n"), "\(unknown.stdout)")
            let object = try json(try FS.provideo(pool, "status", "--bitrate", "0", "--json").stdout)
            let time = try #require(object["recordingTime"] as? [String: Any])
            #expect(time["seconds"] is NSNull && time["bitrate"] as? Int64 == 0)
        }
    }

    @Test(arguments: [
        (["--codec", "prores-999"], "unknown codec 'prores-999'; `provideo codecs` lists them"),
        (["--bitrate", "880"], "bitrate '880' is 880 bit/s, below 1 Mbit/s"),
        (["--bitrate", "1M", "--codec", "dnxhr-hq-1080p25"], "give --bitrate or --codec, not both"),
    ])
    func badRatesAreUsageErrors(_ words: [String], _ message: String) throws {
        try withPool { pool in
            let result = try TestSupport.run("provideo", ["--pool", pool, "status"] + words)
            #expect(result.status == 2 && result.stdout.isEmpty)
            #expect(result.stderr.hasPrefix("provideo: " + message), "\(result.stderr)")
        }
    }

    @Test func codecsListsTheTable() throws {
        let result = try TestSupport.run("provideo", ["codecs"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("\ndnxhr-444-2160p60           3.50 Gbit/s   60 fps\n"), "\(result.stdout)")
        #expect(result.stdout.contains("\nprores-422-hq-2160p29.97    884 Mbit/s    30000/1001 fps\n"), "\(result.stdout)")
        #expect(result.stdout.split(separator: "\n").count == 177)
    }
}

import Foundation
import TestSupport
import Testing

/// `provideo demo`, the README's first command, end to end on a pool of its own making: a
/// generated ProRes clip recorded through the pool and decoded whole by ffprobe.
@Suite struct DemoTests {
    static var hasFFmpeg: Bool { ["/usr/bin/ffmpeg", "/usr/bin/ffprobe"].allSatisfy(FileManager.default.isExecutableFile) }

    /// `demo --json` creates the pool it is pointed at when none is there, records one second,
    /// and prints one JSON object (nothing else on standard output): 25 frames decoded of 25,
    /// the clip's length as on disk, the pool created, the reserve 256 MiB before.
    @Test(.enabled(if: hasFFmpeg, "ffmpeg is not installed (apt-get install ffmpeg)"))
    func demoJSONSaysWhatItRecorded() throws {
        try TestSupport.withScratch("demo-json") { dir in
            let pool = dir + "/pool"
            let result = try TestSupport.run("provideo", ["--pool", pool, "demo", "--seconds", "1", "--json"])
            #expect(result.status == 0, "\(result.stderr)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
                                      "not one JSON object: \(result.stdout)")
            let clip = try #require(object["clip"] as? String)
            defer { try? FileManager.default.removeItem(atPath: clip) }
            defer { _ = try? TestSupport.run("provideo", ["--pool", pool, "destroy"]) }
            let size = try FileManager.default.attributesOfItem(atPath: clip)[.size] as? Int
            #expect(object["frames"] as? Int == 25 && object["expectedFrames"] as? Int == 25, "\(object)")
            #expect(object["pool"] as? String == pool && object["poolCreated"] as? Bool == true, "\(object)")
            #expect(size != nil && object["length"] as? Int == size && size! > 0, "\(object), \(String(describing: size))")
            #expect(object["remainingCapacityBefore"] as? Int == 256 << 20, "\(object)")
        }
    }
}

import Foundation
import Glibc
import ProVideoStorage
import TestSupport
import Testing

/// The README's library example is `ReadmeExample.swift`, byte for byte, and it runs: the
/// recording holds the frames, the in-place zeros and the patched header.
@Suite(.serialized) struct ReadmeExampleTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// The first ```swift block under the heading `## heading` in `file` (relative to the package).
    static func swiftBlock(in file: String, under heading: String) throws -> String {
        let page = try String(contentsOfFile: root + "/" + file, encoding: .utf8)
        let section = try #require(page.components(separatedBy: "\n## \(heading)\n").dropFirst().first)
        let block = try #require(section.components(separatedBy: "```swift\n").dropFirst().first)
        return try #require(block.components(separatedBy: "```\n").first)
    }

    /// The first ```swift block under "## The library" in the README.
    static func readmeBlock() throws -> String { try swiftBlock(in: "README.md", under: "The library") }

    @Test func readmeHoldsTheExampleAsCompiled() throws {
        let source = try String(contentsOfFile: Self.root + "/Tests/ReadmeExampleTests/ReadmeExample.swift", encoding: .utf8)
        let same = try Self.readmeBlock() == source
        #expect(same, "the README's library example differs from Tests/ReadmeExampleTests/ReadmeExample.swift: copy it over")
    }

    /// Runs `body` with a scratch directory holding a 16 MiB pool that `Pool.open()` finds:
    /// the example reads $PROVIDEO_POOL (the suite is serialized; no other test reads it
    /// in-process).
    static func withExamplePool(_ name: String, _ body: (String) throws -> Void) throws {
        try TestSupport.withScratch(name) { dir in
            let pool = try Pool.create(at: dir + "/pool", capacity: 16 << 20, measuringBandwidth: false)
            defer { try? pool.destroy() }
            setenv("PROVIDEO_POOL", dir + "/pool", 1)
            defer { unsetenv("PROVIDEO_POOL") }
            try body(dir)
        }
    }

    @Test func exampleRecordsThroughThePool() throws {
        try Self.withExamplePool("readme-example") { dir in
            let frames = [TestSupport.pattern(1_000_000, seed: 1), TestSupport.pattern(333, seed: 2)]
            let header = Array("moov".utf8)
            let recording = try record(frames, header: header, to: dir + "/take1.mov")
            var expected = frames.flatMap { $0 } + [UInt8](repeating: 0, count: 4096)
            expected.replaceSubrange(0..<4, with: header)
            #expect(recording.path == dir + "/take1.mov" && recording.length == Int64(expected.count))
            let holds = TestSupport.fileHolds(recording.path, expected)
            #expect(holds, "the recording is not the frames, the zeros and the patched header")
        }
    }

    @Test func exampleRecordsFromItsOwnThread() throws {
        try Self.withExamplePool("readme-thread") { dir in
            let frames = (0..<8).map { TestSupport.pattern(100_000, seed: UInt64($0)) }
            let recorder = try recordOnItsOwnThread(frames, to: dir + "/take2.mov")
            for _ in 0..<300 where !recorder.isFinished { usleep(20_000) }
            #expect(recorder.isFinished)
            let exact = TestSupport.fileHolds(dir + "/take2.mov", frames.flatMap { $0 })
            #expect(exact, "the thread's recording differs from its frames")
        }
    }

    /// The README's SwiftPM manifest (the ```swift block under "## The library" that starts
    /// with the tools version) resolves as written: a package beside a checkout named
    /// `pro-video-storage` (here a link to this repository) finds the `ProVideoStorage`
    /// product (`swift package show-dependencies` loads the package graph, and fails on a
    /// product or package name it does not find).
    @Test func readmeManifestResolvesTheProduct() throws {
        let readme = try String(contentsOfFile: Self.root + "/README.md", encoding: .utf8)
        let section = try #require(readme.components(separatedBy: "\n## The library\n").dropFirst().first?
            .components(separatedBy: "\n## ").first)
        let manifest = try #require(section.components(separatedBy: "```swift\n").dropFirst()
            .first { $0.hasPrefix("// swift-tools-version") }?.components(separatedBy: "```\n").first)
        #expect(manifest.contains(".product(name: \"ProVideoStorage\", package: \"pro-video-storage\")"))
        try TestSupport.withScratch { scratch in
            try FileManager.default.createSymbolicLink(atPath: scratch + "/pro-video-storage", withDestinationPath: Self.root)
            let recorder = scratch + "/recorder"
            try FileManager.default.createDirectory(atPath: recorder + "/Sources/Recorder", withIntermediateDirectories: true)
            try manifest.write(toFile: recorder + "/Package.swift", atomically: true, encoding: .utf8)
            try "import ProVideoStorage\nprint(Pool.defaultPath)\n".write(toFile: recorder + "/Sources/Recorder/main.swift",
                                                                         atomically: true, encoding: .utf8)
            let resolved = try TestSupport.run("/usr/bin/env", ["swift", "package", "--package-path", recorder,
                                                                "show-dependencies"])
            #expect(resolved.status == 0, "\(resolved.stderr)")
            #expect(resolved.stdout.contains("pro-video-storage<\(scratch)/pro-video-storage"), "\(resolved.stdout)")
        }
    }
}

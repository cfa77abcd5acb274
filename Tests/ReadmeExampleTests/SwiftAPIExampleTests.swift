import Foundation
import ProVideoStorage
import TestSupport
import Testing

/// Docs/SWIFT-API.md's first program is `Tools/swift-api-example/main.swift`, byte for byte, and
/// it runs as a user runs it: it records into the pool `$PROVIDEO_POOL` names, and says what to
/// do when there is none (issue 42 item 4).
@Suite struct SwiftAPIExampleTests {
    static let root = ReadmeExampleTests.root

    /// The first ```swift block under "## A first program" in Docs/SWIFT-API.md.
    static func documentedProgram() throws -> String {
        try ReadmeExampleTests.swiftBlock(in: "Docs/SWIFT-API.md", under: "A first program")
    }

    @Test func theDocHoldsTheProgramAsBuilt() throws {
        let source = try String(contentsOfFile: Self.root + "/Tools/swift-api-example/main.swift", encoding: .utf8)
        let same = try Self.documentedProgram() == source
        #expect(same, "Docs/SWIFT-API.md's first program differs from Tools/swift-api-example/main.swift: copy it over")
    }

    /// Run as a process with `PROVIDEO_POOL` set: 25 frames of 500,000 bytes, each filled with
    /// its index, land at the destination, and the program says where; with no pool there, it
    /// exits 1 with the error's advice (the command that makes one), not a crash.
    @Test func theProgramRecordsIntoThePool() throws {
        try TestSupport.withScratch { scratch in
            let missing = try TestSupport.run("swift-api-example", [scratch + "/none.mov"],
                                              environment: ["PROVIDEO_POOL": scratch + "/pool"])
            #expect(missing.status == 1, "\(missing.stderr)")
            #expect(missing.stderr == "swift-api-example: no pool at \(scratch)/pool; see `provideo create`\n", "\(missing.stderr)")
            let pool = try Pool.create(at: scratch + "/pool", capacity: 32 << 20, measuringBandwidth: false)
            defer { try? pool.destroy() }
            let destination = scratch + "/take.mov"
            let result = try TestSupport.run("swift-api-example", [destination], environment: ["PROVIDEO_POOL": pool.path])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains("recorded 12500000 bytes at \(destination)"), "\(result.stdout)")
            let frames = (0..<25).flatMap { [UInt8](repeating: UInt8($0), count: 500_000) }
            #expect(TestSupport.fileHolds(destination, frames), "the take is not the program's 25 frames")
            #expect(try pool.check() == [], "the pool is not whole after the program")
        }
    }
}

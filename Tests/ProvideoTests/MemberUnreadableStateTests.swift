import Foundation
import Glibc
import TestSupport
import Testing

/// A member of the pool's group for whom a killed capture's state file cannot be read (mode
/// 000: no malice is needed, a mode change of their own does it) never discards the take: their
/// `recover`, `replenish` and `land` keep it and say why; once the file can be read again the
/// take is salvaged whole (issue 37: 44 of 1,345 corrupted-pool cases lost committed data, some
/// through a member's own EACCES).
@Suite(.serialized, .enabled(if: TestSupport.isRoot, "needs root: users and groups"))
struct MemberUnreadableStateTests {
    typealias Users = AccessTests

    @Test(arguments: ["commit", "capture.json"])
    func aStateFileTheMemberCannotReadKeepsTheTake(_ file: String) throws {
        try TrustBoundaryTests.withWorld { world in
            let input = TestSupport.pattern(700_001, seed: 31)
            let destination = world.out + "/take.mov"
            try world.memberRecordsAndIsKilled(destination, input)
            let capture = try #require(try FileManager.default.contentsOfDirectory(atPath: world.pool + "/captures").first)
            let state = world.pool + "/captures/\(capture)/\(file)"
            let closed = try Users.provideo(as: Users.recorder, "/bin/chmod", ["000", state])
            try #require(closed.status == 0, "\(closed)")

            for command in [["recover"], ["replenish"], ["land", "--retry", "0.1"]] {
                let outcome = try world.asMember(command)
                // Kept, and said: "left as it is" (the commit record), "are kept at" (the journal).
                #expect(outcome.stderr.contains("capture \(capture)")
                        && (outcome.stderr.contains("is left as it is") || outcome.stderr.contains("are kept at")),
                        "\(command): \(outcome)")
                #expect(!(outcome.stdout + outcome.stderr).contains("discarded the capture"), "\(command): \(outcome)")
                #expect(!FileManager.default.fileExists(atPath: destination), "\(command) placed the take unread")
                #expect(FileManager.default.fileExists(atPath: world.pool + "/captures/\(capture)/data"),
                        "\(command) removed the take's data")
            }
            let recover = try world.asMember(["recover"])
            #expect(recover.status == 1, "a take kept is a failure of recover: \(recover)")

            let opened = try Users.provideo(as: Users.recorder, "/bin/chmod", ["640", state])
            try #require(opened.status == 0, "\(opened)")
            let salvaged = try world.asMember(["recover"])
            #expect(salvaged.status == 0 && salvaged.stdout.contains("(\(input.count) bytes) to \(destination)"), "\(salvaged)")
            let whole = TestSupport.fileHolds(destination, input)
            #expect(whole, "the salvaged take is not its input")
        }
    }
}

import Foundation
import TestSupport
import Testing

/// The test helpers that run a child leave none of its pipes open in the test process. A leak of
/// two pipes per child let the suite reach 1,361 descriptors, where Foundation's `Process.run()`
/// crashes (`TestSupport.descriptorCeiling`). Other tests run beside this one, so descriptors
/// are told apart by the pipe inodes the child itself reports, never by a count.
@Suite struct ChildPipesTests {
    /// The child prints the inodes of its standard output and error (pipes to the test).
    static let script = "stat -L -c %i /proc/self/fd/1 /proc/self/fd/2"

    static func pipeInodes(_ stdout: String) -> Set<String> {
        Set(stdout.split(separator: "\n").map { "pipe:[\($0)]" })
    }

    /// The pipe inodes among this process's descriptors.
    static func openPipes() throws -> Set<String> {
        let fds = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")
        return Set(fds.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0) }
            .filter { $0.hasPrefix("pipe:") })
    }

    @Test(arguments: ["TestSupport.run", "CrashKit.run", "start and wait"])
    func aFinishedChildLeavesNoPipeOpen(_ helper: String) throws {
        let stdout: String
        switch helper {
        case "TestSupport.run":
            stdout = try TestSupport.run("/bin/sh", ["-c", Self.script]).stdout
        case "CrashKit.run":
            stdout = try CrashKit.run("/bin/sh", ["-c", Self.script]).stdout
        default:
            let child = try TestSupport.start("/bin/sh", ["-c", Self.script])
            let output = (child.standardOutput as! Pipe).fileHandleForReading.readDataToEndOfFile()
            #expect(TestSupport.wait(child))
            stdout = String(decoding: output, as: UTF8.self)
        }
        let pipes = Self.pipeInodes(stdout)
        try #require(pipes.count == 2, "the child reported \(stdout)")
        // The run helpers close the pipes themselves; after `start` they close when Foundation
        // frees the `Process`, which its own thread may do a moment after `wait`. A leak is
        // for good, so a generous deadline tells the two apart.
        let deadline = ContinuousClock.now + .seconds(helper == "start and wait" ? 30 : 0)
        while try !Self.openPipes().isDisjoint(with: pipes) && ContinuousClock.now < deadline { usleep(10_000) }
        #expect(try Self.openPipes().isDisjoint(with: pipes), "\(helper) left the child's pipes open: \(pipes)")
    }
}

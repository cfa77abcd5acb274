import Foundation
import Glibc
import TestSupport
import Testing
@testable import ProVideoStorage

/// Each of the three no-clobber publishes, chosen by making the ways before it unsupported as a
/// filesystem would (renameat2 `EINVAL` as on GlusterFS, link `EPERM` as on SMB): it publishes
/// to a free name, and refuses a taken one, leaving both files as they were.
@Suite struct NoClobberPublishTests {
    static func calls(for method: NoClobberPublish.Method) -> SystemCalls {
        var calls = SystemCalls.live
        if method != .renameNoReplace { calls.renameNoReplace = { _, _ in -EINVAL } }
        if method == .exclusivePlaceholder { calls.link = { _, _ in -EPERM } }
        return calls
    }

    @Test(arguments: NoClobberPublish.Method.allCases)
    func publishesToAFreeName(_ method: NoClobberPublish.Method) throws {
        try TestSupport.withScratch { directory in
            let temporary = directory + "/.take.mov.partial", destination = directory + "/take.mov"
            let bytes = TestSupport.pattern(100_000, seed: 7)
            try Data(bytes).write(to: URL(fileURLWithPath: temporary))
            let used = try NoClobberPublish(calls: Self.calls(for: method), learnt: .init()).publish(temporary, as: destination)
            #expect(used == method)
            #expect(TestSupport.fileHolds(destination, bytes))
            #expect(!FileManager.default.fileExists(atPath: temporary))
        }
    }

    @Test(arguments: NoClobberPublish.Method.allCases)
    func neverReplacesATakenName(_ method: NoClobberPublish.Method) throws {
        try TestSupport.withScratch { directory in
            let temporary = directory + "/.take.mov.partial", destination = directory + "/take.mov"
            let mine = TestSupport.pattern(5000, seed: 1), theirs = Array("an editor's file".utf8)
            try Data(mine).write(to: URL(fileURLWithPath: temporary))
            try Data(theirs).write(to: URL(fileURLWithPath: destination))
            #expect {
                try NoClobberPublish(calls: Self.calls(for: method), learnt: .init()).publish(temporary, as: destination)
            } throws: { ($0 as? ProVideoError)?.code == .destinationExists }
            #expect(TestSupport.fileHolds(destination, theirs))
            #expect(TestSupport.fileHolds(temporary, mine))
        }
    }

    /// The way that worked is remembered for the filesystem: the refused rename is not tried again.
    @Test func learnsTheWayOnce() throws {
        try TestSupport.withScratch { directory in
            let renames = Shared(0)
            var calls = SystemCalls.live
            calls.renameNoReplace = { _, _ in renames.update { $0 += 1 }; return -EINVAL }
            let publisher = NoClobberPublish(calls: calls, learnt: .init())
            for name in ["a", "b", "c"] {
                try Data([1, 2, 3]).write(to: URL(fileURLWithPath: "\(directory)/.\(name)"))
                #expect(try publisher.publish("\(directory)/.\(name)", as: "\(directory)/\(name)") == .linkThenUnlink)
            }
            #expect(renames.update { $0 } == 1)
        }
    }
}

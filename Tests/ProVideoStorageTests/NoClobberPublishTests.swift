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

    /// Publishes `temporary` ("DIR/.NAME") as "DIR/NAME" through its open file and directory.
    static func publish(_ temporary: String, in directory: String, with publisher: NoClobberPublish) throws
        -> NoClobberPublish.Method {
        let name = String(FileSystem.lastComponent(of: temporary).dropFirst())
        let file = try FileDescriptor.open(temporary, O_RDONLY)
        return try publisher.publish(file, from: "." + name, as: name.replacingOccurrences(of: ".partial", with: ""),
                                     in: try DirectoryHandle.open(directory))
    }

    /// The temporary replaced by a link to another file after it was verified (a racer): no
    /// way publishes the link as the recording, and the error says what happened.
    @Test(arguments: NoClobberPublish.Method.allCases)
    func aSwappedTemporaryIsNeverTakenForTheRecording(_ method: NoClobberPublish.Method) throws {
        try TestSupport.withScratch { directory in
            let temporary = directory + "/.take.mov.partial", destination = directory + "/take.mov"
            try Data(TestSupport.pattern(4096, seed: 2)).write(to: URL(fileURLWithPath: temporary))
            try Data("someone else's".utf8).write(to: URL(fileURLWithPath: directory + "/other"))
            let file = try FileDescriptor.open(temporary, O_RDONLY)
            try FileManager.default.removeItem(atPath: temporary)
            try FileManager.default.createSymbolicLink(atPath: temporary, withDestinationPath: directory + "/other")
            let publisher = NoClobberPublish(calls: Self.calls(for: method), learnt: .init())
            #expect {
                try publisher.publish(file, from: ".take.mov.partial", as: "take.mov", in: try DirectoryHandle.open(directory))
            } throws: { error in
                // A rename moved the link to the final name, and the check caught it; the link way
                // gives the verified file itself a name, which an unlinked file cannot get (ENOENT).
                let message = (error as? ProVideoError)?.message ?? ""
                return method == .linkThenUnlink ? (error as? ProVideoError)?.errno == ENOENT
                    : message.contains("not the verified copy")
            }
            var st = stat()
            #expect(lstat(destination, &st) != 0 || (st.st_mode & S_IFMT) == S_IFLNK, "a file other than the link appeared")
            #expect(TestSupport.fileHolds(directory + "/other", Array("someone else's".utf8)))
        }
    }

    @Test(arguments: NoClobberPublish.Method.allCases)
    func publishesToAFreeName(_ method: NoClobberPublish.Method) throws {
        try TestSupport.withScratch { directory in
            let temporary = directory + "/.take.mov.partial", destination = directory + "/take.mov"
            let bytes = TestSupport.pattern(100_000, seed: 7)
            try Data(bytes).write(to: URL(fileURLWithPath: temporary))
            let used = try Self.publish(temporary, in: directory, with: NoClobberPublish(calls: Self.calls(for: method), learnt: .init()))
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
                try Self.publish(temporary, in: directory, with: NoClobberPublish(calls: Self.calls(for: method), learnt: .init()))
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
                #expect(try Self.publish("\(directory)/.\(name)", in: directory, with: publisher) == .linkThenUnlink)
            }
            #expect(renames.update { $0 } == 1)
        }
    }
}

import Foundation
import Glibc
import TestSupport
import Testing
@testable import ProVideoStorage

/// A directory resolved once names its files to the kernel as `/proc/self/fd/N/NAME`, and to
/// the user by the path they gave: a held take's reason said `/proc/self/fd/14/….partial`
/// (issue 42).
@Suite struct DirectoryHandleTests {
    @Test func messagesNameTheUsersPath() throws {
        try TestSupport.withScratch { scratch in
            let directory = try DirectoryHandle.open(scratch)
            let missing = #expect(throws: ProVideoError.self) { try directory.open(".take.mov.partial", O_RDONLY) }
            #expect(missing?.errno == ENOENT)
            #expect(missing?.message.contains("\(scratch)/.take.mov.partial") == true
                    && missing?.message.contains("/proc/self/fd") == false, "\(String(describing: missing))")
            #expect(missing?.path == scratch + "/.take.mov.partial")
            let file = try directory.open("take.mov", O_RDWR | O_CREAT | O_EXCL, mode: 0o600)
            #expect(file.path == scratch + "/take.mov")
        }
    }
}

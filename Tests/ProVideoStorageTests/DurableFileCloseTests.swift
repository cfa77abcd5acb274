import Foundation
import Glibc
import Synchronization
import ProVideoSystem
import TestSupport
import Testing
@testable import ProVideoStorage

/// A state file is renamed over the old one only when its close(2) succeeded too: NFS and FUSE
/// filesystems may report a failed write only at close, and the deinit that closed it before
/// dropped that error.
struct DurableFileCloseTests {
    @Test func aTemporaryWhoseCloseFailsIsNotRenamedOverTheFile() throws {
        try TestSupport.withScratch { scratch in
            let path = scratch + "/state.json"
            let access = PoolAccess(owner: getuid(), group: getgid())
            try DurableFile.replace(path, with: Array("old".utf8), .live, access: access)
            let closes = Mutex<[String]>([])
            var calls = SystemCalls.live
            calls.close = { fd in
                let file = TestSupport.path(of: fd)
                closes.withLock { $0.append(file) }
                let rc = SystemCalls.live.close(fd)
                return file.hasSuffix(".tmp") ? -EIO : rc
            }
            #expect {
                try DurableFile.replace(path, with: Array("new".utf8), calls, access: access)
            } throws: { ($0 as? ProVideoError)?.errno == EIO && ($0 as? ProVideoError)?.message.contains("close") == true }
            #expect(closes.withLock { $0.map { FileSystem.lastComponent(of: $0) } } == ["state.json.tmp"])
            #expect(TestSupport.fileHolds(path, Array("old".utf8)))
            #expect(!FileManager.default.fileExists(atPath: path + ".tmp"))
            try DurableFile.replace(path, with: Array("new".utf8), .live, access: access)
            #expect(TestSupport.fileHolds(path, Array("new".utf8)))
        }
    }
}

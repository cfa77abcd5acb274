import Glibc
import Testing
@testable import ProVideoStorage

/// `ProVideoError` as swift-nio's `FileSystemError` (issue 26): an extensible code, the failed
/// system call as a typed cause, and where it was raised on every error.
@Suite struct ErrorTests {
    @Test func everyErrorSaysWhereItWasRaised() {
        let error = ProVideoError(.busy, "the pool is busy")
        #expect(error.location?.hasPrefix("ProVideoStorageTests/ErrorTests.swift:") == true, "\(error.location ?? "none")")
        #expect(error.cause == nil && error.systemCall == nil)
        // Where it was raised is not part of what it is.
        #expect(error == ProVideoError(.busy, "the pool is busy"))
    }

    @Test func aFailedSystemCallIsTheCause() {
        let error = ProVideoError.system("fallocate", errno: ENOSPC, path: "/p/reserve")
        #expect(error.code == .notEnoughSpace)
        #expect(error.cause == SystemCallError(systemCall: "fallocate", errno: ENOSPC))
        #expect(error.systemCall == "fallocate" && error.errno == ENOSPC)
        #expect(error.cause?.description == "fallocate: No space left on device (errno \(ENOSPC))")
        #expect(error.location?.hasPrefix("ProVideoStorageTests/ErrorTests.swift:") == true)
    }

    /// A code this release does not know (a later one's) is a value like any other: code that
    /// switches over codes keeps a `default`.
    @Test func codesAreExtensible() {
        let future = ProVideoError.Code(rawValue: "quotaExceeded")
        let described: String = switch future {
        case .busy: "busy"
        default: future.description
        }
        #expect(described == "quotaExceeded")
        #expect(ProVideoError.Code.storageFull.rawValue == "storageFull")
    }
}

import Glibc

/// The one error type of ProVideoStorage: a code to switch on, a message that says what
/// happened and what to do, and the cause (an errno value and the path involved) when a system
/// call failed. Modelled on swift-nio's `FileSystemError`.
public struct ProVideoError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Code: String, Sendable, Equatable {
        /// The filesystem or kernel cannot host a pool (see `Pool.isSupported(at:)`).
        case unsupported
        /// No pool at the path; create one with `provideo create`.
        case poolNotFound
        /// A pool already exists at the path.
        case poolExists
        /// The pool is busy (a capture, a replenish or a resize is running).
        case busy
        /// The filesystem does not have the free space an operation needed.
        case notEnoughSpace
        /// A capture reached the end of the reserve: the frame was not accepted.
        case storageFull
        /// Every capture buffer was in flight and the overrun policy gave up.
        case overrun
        /// Starting the capture would take the pool's running captures past its admissible
        /// bandwidth (see `Pool.bandwidth`); the message names the numbers.
        case bandwidthExceeded
        /// The destination of a capture exists; it is never overwritten.
        case destinationExists
        /// The destination's directory does not exist, is not a directory or is not writable.
        case invalidDestination
        /// The process may not use the pool or a path (EACCES, EPERM): the message names the
        /// owner and the group to join.
        case permissionDenied
        /// The pool's state file is missing, unreadable or from a newer version.
        case corruptState
        /// A bad argument (a size, an offset, a path).
        case invalidArgument
        /// A read, write or flush failed (EIO, EROFS, a zero-byte completion, …).
        case ioError
        /// The capture has already finished, been cancelled or failed.
        case captureClosed
        /// The write path found one of its own rules broken (a defect): the capture stopped.
        case invariantViolated
    }

    public var code: Code
    public var message: String
    /// The errno value of the system call that failed, if one did.
    public var errno: Int32?
    /// The path the failing operation worked on, if any.
    public var path: String?
    /// The system call that failed ("fdatasync", "renameat2", …), if one did.
    public var systemCall: String?
    /// Where the library raised it, as `Module/File.swift:line` (`#fileID`, `#line`): for a
    /// bug report, not for the user.
    public var location: String?

    public init(_ code: Code, _ message: String, errno: Int32? = nil, path: String? = nil) {
        self.code = code
        self.message = message
        self.errno = errno
        self.path = path
    }

    /// An error for a failed system call: `call` names it (e.g. "fallocate"), `errno` is positive.
    static func system(_ call: String, errno: Int32, path: String? = nil,
                       file: StaticString = #fileID, line: UInt = #line) -> ProVideoError {
        let resolved: Code = switch errno {
        case ENOSPC, EDQUOT: .notEnoughSpace
        case EACCES, EPERM: .permissionDenied
        default: .ioError
        }
        let target = path.map { " on \($0)" } ?? ""
        var error = ProVideoError(resolved, "\(call)\(target) failed: \(Errno.description(errno))",
                                  errno: errno, path: path)
        error.systemCall = call
        error.location = "\(file):\(line)"
        return error
    }

    public var description: String { message }
}

import Glibc

/// The one error type of ProVideoStorage: a code to switch on, a message that says what
/// happened, the operations that deal with it (`remedies`), and the cause (an errno value and
/// the path involved) when a system
/// call failed. Modelled on swift-nio's `FileSystemError`.
public struct ProVideoError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What went wrong, to switch on. Extensible, as swift-nio's `FileSystemError.Code`: a later
    /// release may add codes, so a `switch` over them needs a `default`. The C API's numbers
    /// for them never change (provideo.h). The codes a system call's failure maps to are
    /// here; the library's own (busy, full, …) are ProVideoStorage's
    /// (`ProVideoErrorCodes.swift`).
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The filesystem does not have the free space an operation needed.
        public static let notEnoughSpace = Code(rawValue: "notEnoughSpace")
        /// The process may not use a path (EACCES, EPERM): the message names the owner and
        /// the group to join.
        public static let permissionDenied = Code(rawValue: "permissionDenied")
        /// A state file is missing, unreadable, not what it should be, or from a newer version.
        public static let corruptState = Code(rawValue: "corruptState")
        /// A bad argument (a size, an offset, a path).
        public static let invalidArgument = Code(rawValue: "invalidArgument")
        /// A read, write or flush failed (EIO, EROFS, a zero-byte completion, …).
        public static let ioError = Code(rawValue: "ioError")
        /// The task running an async operation was cancelled at a point where stopping is
        /// safe; the message says what was left as it was (see Docs/SWIFT-API.md).
        public static let cancelled = Code(rawValue: "cancelled")
    }

    /// An operation that deals with what went wrong, for a program to offer or run (the
    /// library's own call of that name) and for a tool to word (`provideo`'s "run `provideo
    /// replenish`" for `.replenish`): the error says which, the message only what happened.
    /// Extensible as `Code`; the library's are ProVideoStorage's (`ProVideoErrorCodes.swift`).
    public struct Remedy: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }
    }

    public var code: Code
    /// What happened, with the numbers and paths involved; what to do is `remedies`.
    public var message: String
    /// What deals with it, the first preferred; empty when only the message's facts help.
    public var remedies: [Remedy]
    /// The errno value of the system call that failed, if one did.
    public var errno: Int32?
    /// The path the failing operation worked on, if any.
    public var path: String?
    /// The system call that failed and its errno, when one did: the underlying cause, as
    /// swift-nio's `FileSystemError.cause` (`SystemCallError`).
    public var cause: SystemCallError?
    /// The system call that failed ("fdatasync", "renameat2", …), if one did.
    public var systemCall: String? { cause?.systemCall }
    /// Where the library raised it, as `Module/File.swift:line` (`#fileID`, `#line`), on every
    /// error: for a bug report, not for the user.
    public var location: String?

    public init(_ code: Code, _ message: String, errno: Int32? = nil, path: String? = nil, remedies: [Remedy] = [],
                file: StaticString = #fileID, line: UInt = #line) {
        self.code = code
        self.message = message
        self.remedies = remedies
        self.errno = errno
        self.path = path
        self.location = "\(file):\(line)"
    }

    /// The same error: where it was raised is not part of what it is.
    public static func == (lhs: ProVideoError, rhs: ProVideoError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message && lhs.errno == rhs.errno && lhs.path == rhs.path
            && lhs.cause == rhs.cause && lhs.remedies == rhs.remedies
    }

    /// An error for a failed system call: `call` names it (e.g. "fallocate"), `errno` is positive.
    package static func system(_ call: String, errno: Int32, path: String? = nil,
                       file: StaticString = #fileID, line: UInt = #line) -> ProVideoError {
        let resolved: Code = switch errno {
        case ENOSPC, EDQUOT: .notEnoughSpace
        case EACCES, EPERM: .permissionDenied
        default: .ioError
        }
        let target = path.map { " on \($0)" } ?? ""
        var error = ProVideoError(resolved, "\(call)\(target) failed: \(Errno.description(errno))",
                                  errno: errno, path: path, file: file, line: line)
        error.cause = SystemCallError(systemCall: call, errno: errno)
        return error
    }

    /// The message, then the remedies' names: "… (remedies: replenish, resize)".
    public var description: String {
        guard !remedies.isEmpty else { return message }
        let names = remedies.map(\.rawValue).joined(separator: ", ")
        return "\(message) (\(remedies.count == 1 ? "remedy" : "remedies"): \(names))"
    }
}

/// A system call that failed: its name and its errno (positive), with the C library's text.
public struct SystemCallError: Error, Hashable, Sendable, CustomStringConvertible {
    /// "fallocate", "renameat2", …
    public var systemCall: String
    /// The errno value it failed with (`ENOSPC`, `EIO`, …), positive.
    public var errno: Int32

    public init(systemCall: String, errno: Int32) {
        self.systemCall = systemCall
        self.errno = errno
    }

    /// "fallocate: No space left on device (errno 28)".
    public var description: String { "\(systemCall): \(Errno.description(errno)) (errno \(errno))" }
}

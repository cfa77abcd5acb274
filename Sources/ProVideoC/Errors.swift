import CProVideoAPI
import ProVideoStorage

/// An error the C layer itself raises (bad handle, NULL pointer, bad option).
struct APIError: Error {
    var code: provideo_code
    var message: String
    init(_ code: provideo_code, _ message: String) {
        self.code = code
        self.message = message
    }
}

extension ProVideoError.Code {
    /// The stable C value of each code (provideo.h); never renumbered.
    var c: provideo_code {
        switch self {
        case .unsupported: PROVIDEO_E_UNSUPPORTED
        case .poolNotFound: PROVIDEO_E_POOL_NOT_FOUND
        case .poolExists: PROVIDEO_E_POOL_EXISTS
        case .busy: PROVIDEO_E_BUSY
        case .notEnoughSpace: PROVIDEO_E_NOT_ENOUGH_SPACE
        case .storageFull: PROVIDEO_E_STORAGE_FULL
        case .overrun: PROVIDEO_E_OVERRUN
        case .destinationExists: PROVIDEO_E_DESTINATION_EXISTS
        case .invalidDestination: PROVIDEO_E_INVALID_DESTINATION
        case .permissionDenied: PROVIDEO_E_PERMISSION_DENIED
        case .corruptState: PROVIDEO_E_CORRUPT_STATE
        case .invalidArgument: PROVIDEO_E_INVALID_ARGUMENT
        case .ioError: PROVIDEO_E_IO
        case .captureClosed: PROVIDEO_E_CAPTURE_CLOSED
        case .invariantViolated: PROVIDEO_E_INVARIANT_VIOLATED
        case .bandwidthExceeded: PROVIDEO_E_BANDWIDTH_EXCEEDED
        // Only async Swift calls are cancelled; every C call runs to its end.
        case .cancelled: PROVIDEO_E_IO
        // A code added after this table: the C API's numbers are fixed, so it reads as internal
        // until provideo.h gives it one.
        default: PROVIDEO_E_INTERNAL
        }
    }
}

extension [ProVideoError.Remedy] {
    /// What deals with an error, for a C program's message (provideo.h: "what happened and
    /// what to do"): the C call where there is one, else the administrator's `provideo`
    /// command; "" when none is open to a C program (a capture over the bandwidth: the C API
    /// has no option for it).
    var cText: String {
        let words = compactMap { remedy -> String? in
            switch remedy {
            case .create: "provideo_pool_create()"
            case .replenish: "provideo_pool_replenish()"
            case .resize: "provideo_pool_resize()"
            case .salvageWithoutJournal: "`provideo recover --salvage-to DIR`"
            case .createOnUnmountedFilesystem: "`provideo create --force`"
            case .admitOverBandwidth: nil
            default: "`provideo \(remedy.rawValue)`"
            }
        }
        return words.isEmpty ? "" : "; remedy: " + words.joined(separator: " or ")
    }
}

/// Runs one C call: every Swift error becomes a code and a message in the caller's
/// `provideo_error` (filled on success too, so a reused struct never shows a stale error).
/// Nothing is thrown across the C boundary.
func apiCall(_ err: UnsafeMutablePointer<provideo_error>?, _ body: () throws -> Void) -> Int32 {
    let (code, errno, message): (provideo_code, Int32, String)
    do {
        try body()
        (code, errno, message) = (PROVIDEO_OK, 0, "")
    } catch let error as ProVideoError {
        (code, errno, message) = (error.code.c, error.errno ?? 0, error.message + error.remedies.cText)
    } catch let error as APIError {
        (code, errno, message) = (error.code, 0, error.message)
    } catch {
        (code, errno, message) = (PROVIDEO_E_INTERNAL, 0, "unexpected error: \(error)")
    }
    if let err {
        err.pointee.code = code.rawValue
        err.pointee.sys_errno = errno
        copy(message, into: &err.pointee.message)
    }
    return code.rawValue
}

/// Copies `text` NUL-terminated into a fixed C char array, cut at a UTF-8 character boundary.
func copy<Storage>(_ text: String, into storage: inout Storage) {
    withUnsafeMutableBytes(of: &storage) { copy(text, into: $0) }
}

/// Copies `text` NUL-terminated into a caller's buffer, cut at a UTF-8 character boundary.
func copy(_ text: String, into buffer: UnsafeMutableRawBufferPointer) {
    guard buffer.count > 0 else { return }
    var bytes = Array(text.utf8.prefix(buffer.count - 1))
    // Drop a cut multi-byte character: continuation bytes, then its lead byte.
    if bytes.count == buffer.count - 1, let last = bytes.lastIndex(where: { $0 & 0xC0 != 0x80 }), bytes[last] >= 0xC0 {
        let length = bytes[last] >= 0xF0 ? 4 : bytes[last] >= 0xE0 ? 3 : 2
        if bytes.count - last < length { bytes.removeSubrange(last...) }
    }
    buffer.copyBytes(from: bytes)
    buffer[bytes.count] = 0
}

/// A required pointer argument, or `PROVIDEO_E_NULL_POINTER` naming it.
func required<T>(_ pointer: T?, _ name: String) throws -> T {
    guard let pointer else { throw APIError(PROVIDEO_E_NULL_POINTER, "\(name) is NULL") }
    return pointer
}

/// A C string argument as a Swift string.
func string(_ pointer: UnsafePointer<CChar>?, _ name: String) throws -> String {
    String(cString: try required(pointer, name))
}

/// A `size_t` argument (imported as Int): a size the caller computed as negative shows up
/// here as a huge value, refused rather than trapping in a conversion later.
func size(_ value: Int, _ name: String) throws -> Int {
    guard value >= 0 else { throw APIError(PROVIDEO_E_INVALID_ARGUMENT, "\(name) \(UInt(bitPattern: value)) is too large") }
    return value
}

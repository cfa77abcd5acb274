import CProVideoAPI
import ProVideoStorage

/// Static descriptions: `provideo_strerror` returns pointers into these, valid for the life
/// of the process (StaticString storage is in the binary's read-only data).
private let descriptions: [Int32: StaticString] = [
    PROVIDEO_OK.rawValue: "success",
    PROVIDEO_E_UNSUPPORTED.rawValue: "the filesystem or kernel cannot host a pool",
    PROVIDEO_E_POOL_NOT_FOUND.rawValue: "no pool at this path",
    PROVIDEO_E_POOL_EXISTS.rawValue: "a pool already exists at this path",
    PROVIDEO_E_BUSY.rawValue: "the pool is busy",
    PROVIDEO_E_NOT_ENOUGH_SPACE.rawValue: "not enough space on the filesystem",
    PROVIDEO_E_STORAGE_FULL.rawValue: "storage full: the capture reached the end of the reserve",
    PROVIDEO_E_OVERRUN.rawValue: "overrun: every capture buffer is in flight",
    PROVIDEO_E_DESTINATION_EXISTS.rawValue: "the destination exists",
    PROVIDEO_E_INVALID_DESTINATION.rawValue: "invalid destination",
    PROVIDEO_E_PERMISSION_DENIED.rawValue: "permission denied",
    PROVIDEO_E_CORRUPT_STATE.rawValue: "the pool's state is corrupt or from a newer version",
    PROVIDEO_E_INVALID_ARGUMENT.rawValue: "invalid argument",
    PROVIDEO_E_IO.rawValue: "I/O error",
    PROVIDEO_E_CAPTURE_CLOSED.rawValue: "the capture has already ended",
    PROVIDEO_E_INVARIANT_VIOLATED.rawValue: "internal invariant violated",
    PROVIDEO_E_INVALID_HANDLE.rawValue: "invalid handle",
    PROVIDEO_E_NULL_POINTER.rawValue: "NULL pointer argument",
    PROVIDEO_E_INTERNAL.rawValue: "internal error",
    PROVIDEO_E_BANDWIDTH_EXCEEDED.rawValue: "the pool's admissible bandwidth would be exceeded",
]

private let unknown: StaticString = "unknown error code"

@c public func provideo_strerror(_ code: Int32) -> UnsafePointer<CChar> {
    let text = descriptions[code] ?? unknown
    return UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
}

@c public func provideo_version() -> UnsafePointer<CChar> {
    UnsafeRawPointer(ProVideoStorageVersion.current.utf8Start).assumingMemoryBound(to: CChar.self)
}

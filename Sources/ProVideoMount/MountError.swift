import Glibc
import ProVideoStorage

/// The errno a FUSE request answers for a library error: what a program writing to a local
/// file expects to see for the same cause.
enum MountError {
    static func errno(for error: Error) -> Int32 {
        guard let error = error as? ProVideoError else { return EIO }
        switch error.code {
        case .storageFull, .notEnoughSpace: return ENOSPC
        case .destinationExists: return EEXIST
        case .permissionDenied: return EACCES
        case .busy, .bandwidthExceeded: return EBUSY
        case .captureClosed: return EBADF
        case .invalidArgument: return EINVAL
        case .invalidDestination: return error.errno.map { $0 == 0 ? ENOENT : $0 } ?? ENOENT
        default: return error.errno.flatMap { $0 > 0 ? $0 : nil } ?? EIO
        }
    }
}

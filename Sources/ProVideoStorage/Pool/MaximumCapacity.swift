extension Pool {
    /// The largest capacity a pool takes, in bytes: 8 EiB less 1 GiB, the largest multiple of
    /// 1 GiB a file offset (Int64) holds. A capacity is rounded up to the allocation unit (the
    /// direct-I/O alignment or the block size, a power of two far below 1 GiB), and near
    /// `Int64.max` that rounding would overflow; below this limit it always fits.
    package static let maximumCapacity: Int64 = Int64.max / (1 << 30) * (1 << 30)

    /// Refuses a capacity outside 1 ... `maximumCapacity` bytes.
    /// - Throws: `.invalidArgument` saying the limit.
    static func requireValidCapacity(_ capacity: Int64) throws {
        guard capacity > 0 else { throw ProVideoError(.invalidArgument, "the capacity must be more than 0 bytes") }
        guard capacity <= maximumCapacity else {
            throw ProVideoError(.invalidArgument, "a capacity of \(capacity) bytes is too large: the limit is "
                                + "\(maximumCapacity) bytes (8 EiB less 1 GiB)")
        }
    }
}

import ProVideoSystem

extension Pool {
    /// The largest capacity a pool takes, in bytes (`Reserve.maximumSize`).
    package static let maximumCapacity: Int64 = Reserve.maximumSize

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

import CProVideoAPI
import ProVideoStorage

// The pool half of provideo.h (the header documents units, blocking and errors).

@c public func provideo_pool_open(_ path: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<OpaquePointer?>?,
                                  _ err: UnsafeMutablePointer<provideo_error>?) -> Int32 {
    apiCall(err) {
        let out = try required(out, "out")
        out.pointee = nil
        // NULL means "the default pool" (PROVIDEO_POOL, else /var/lib/provideo), as `--pool` absent.
        let pool = try Pool.open(at: path.map { String(cString: $0) })
        out.pointee = Registry.add(.pool(PoolHandle(pool)))
    }
}

@c public func provideo_pool_close(_ pool: OpaquePointer?, _ err: UnsafeMutablePointer<provideo_error>?) -> Int32 {
    apiCall(err) {
        guard case .pool(let handle)? = Registry.remove(pool, { if case .pool = $0 { true } else { false } }) else {
            throw Registry.invalid(pool, "pool")
        }
        // Wait for a call in progress on another thread; the last reference then frees it.
        handle.lock.withLock {}
    }
}

@c public func provideo_pool_get_status(_ pool: OpaquePointer?, _ out: UnsafeMutablePointer<provideo_pool_status>?,
                                    _ err: UnsafeMutablePointer<provideo_error>?) -> Int32 {
    apiCall(err) {
        let handle = try Registry.pool(pool)
        let out = try required(out, "out")
        try handle.lock.withLock {
            let pool = handle.pool
            var status = provideo_pool_status()
            status.initial_capacity = try pool.initialCapacity
            status.remaining_capacity = try pool.remainingCapacity
            status.busy_reasons = UInt32(truncatingIfNeeded: try pool.busyReasons.rawValue)
            status.memory_alignment = UInt32(truncatingIfNeeded: pool.directIOAlignment.memory)
            status.offset_alignment = UInt32(truncatingIfNeeded: pool.directIOAlignment.offset)
            out.pointee = status
        }
    }
}

@c public func provideo_pool_replenish(_ pool: OpaquePointer?, _ out: UnsafeMutablePointer<provideo_replenish_result>?,
                                       _ err: UnsafeMutablePointer<provideo_error>?) -> Int32 {
    apiCall(err) {
        let handle = try Registry.pool(pool)
        try handle.lock.withLock {
            let result = try handle.pool.replenish()
            out?.pointee = provideo_replenish_result(added: result.added, missing: result.missing,
                                                     remaining_capacity: result.remainingCapacity)
        }
    }
}

// Pool.isSupported(at:) for C, with its reason.
@c public func provideo_is_supported(_ directory: UnsafePointer<CChar>?, _ reason: UnsafeMutablePointer<CChar>?,
                                     _ length: Int) -> Int32 {
    guard let directory else { return PROVIDEO_E_NULL_POINTER.rawValue }
    let why = Pool.unsupportedReason(at: String(cString: directory))
    if let reason, length > 0 {
        copy(why ?? "", into: UnsafeMutableRawBufferPointer(start: reason, count: length))
    }
    return why == nil ? 1 : 0
}

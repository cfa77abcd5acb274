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

@c public func provideo_pool_create_options_init(_ options: UnsafeMutablePointer<provideo_pool_create_options>?) {
    guard let options else { return }
    options.pointee = provideo_pool_create_options()
    options.pointee.size = UInt32(MemoryLayout<provideo_pool_create_options>.size)
    options.pointee.measure_bandwidth = 1
}

@c public func provideo_pool_create(_ path: UnsafePointer<CChar>?, _ capacity: Int64,
                                    _ options: UnsafePointer<provideo_pool_create_options>?,
                                    _ out: UnsafeMutablePointer<OpaquePointer?>?,
                                    _ err: UnsafeMutablePointer<provideo_error>?) -> Int32 {
    apiCall(err) {
        let out = try required(out, "out")
        out.pointee = nil
        let path = try string(path, "path")
        let chosen = try createOptions(options)
        let group = chosen.group.map { String(cString: $0) }
        // 0 means "none" in C; a negative count or rate reaches `create`'s own check and error.
        let pool = try Pool.create(at: path, capacity: capacity, zeroFill: chosen.zero_fill != 0, group: group,
                                   maxCaptures: chosen.max_captures == 0 ? nil : Int(chosen.max_captures),
                                   bandwidth: chosen.bandwidth == 0 ? nil : chosen.bandwidth,
                                   measuringBandwidth: chosen.measure_bandwidth != 0)
        out.pointee = Registry.add(.pool(PoolHandle(pool)))
    }
}

/// The caller's options over the defaults, as far as the caller's `size` reaches: a program
/// built against an older, shorter struct gets the defaults for the fields it does not have.
private func createOptions(_ options: UnsafePointer<provideo_pool_create_options>?) throws
    -> provideo_pool_create_options {
    var chosen = provideo_pool_create_options()
    provideo_pool_create_options_init(&chosen)
    guard let options else { return chosen }
    let given = Int(options.pointee.size)
    guard given >= MemoryLayout<UInt32>.size else {
        throw ProVideoError(.invalidArgument, "options->size is \(given): fill the options with "
                            + "provideo_pool_create_options_init first")
    }
    withUnsafeMutableBytes(of: &chosen) { target in
        target.copyMemory(from: UnsafeRawBufferPointer(start: options, count: min(given, target.count)))
    }
    chosen.size = UInt32(MemoryLayout<provideo_pool_create_options>.size)
    return chosen
}

@c public func provideo_pool_resize(_ pool: OpaquePointer?, _ capacity: Int64, _ resized: UnsafeMutablePointer<Int64>?,
                                    _ err: UnsafeMutablePointer<provideo_error>?) -> Int32 {
    apiCall(err) {
        let handle = try Registry.pool(pool)
        try handle.lock.withLock {
            let capacity = try handle.pool.resize(to: capacity)
            resized?.pointee = capacity
        }
    }
}

@c public func provideo_pool_measure_bandwidth(_ pool: OpaquePointer?, _ out: UnsafeMutablePointer<provideo_bandwidth>?,
                                               _ err: UnsafeMutablePointer<provideo_error>?) -> Int32 {
    apiCall(err) {
        let handle = try Registry.pool(pool)
        try handle.lock.withLock {
            guard let measured = try handle.pool.measureAndRecordBandwidth() else {
                throw ProVideoError(.notEnoughSpace, "the pool's reserve is smaller than one 4 MiB write: grow it "
                                    + "(provideo_pool_resize) to measure its bandwidth")
            }
            out?.pointee = provideo_bandwidth(sustained: measured.sustained, burst: measured.burst, bytes: measured.bytes,
                                              seconds: measured.seconds, settled: measured.settled ? 1 : 0, reserved: 0)
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

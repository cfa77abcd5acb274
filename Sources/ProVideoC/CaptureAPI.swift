import CProVideoAPI
import ProVideoStorage

// The capture half of provideo.h (the header documents units, blocking and errors).

@c public func provideo_capture_options_init(_ options: UnsafeMutablePointer<provideo_capture_options>?) {
    options?.pointee = CaptureOptions().c
}

@c public func provideo_capture_start(_ pool: OpaquePointer?, _ destination: UnsafePointer<CChar>?,
                                      _ options: UnsafePointer<provideo_capture_options>?,
                                      _ out: UnsafeMutablePointer<OpaquePointer?>?,
                                      _ err: UnsafeMutablePointer<provideo_error>?) -> Int32 {
    apiCall(err) {
        let handle = try Registry.pool(pool)
        let out = try required(out, "out")
        out.pointee = nil
        let destination = try string(destination, "destination")
        let options = try options.map { try CaptureOptions(c: $0.pointee) } ?? CaptureOptions()
        let capture = try handle.lock.withLock { try handle.pool.startCapture(to: destination, options: options) }
        out.pointee = Registry.add(.capture(CaptureHandle(capture)))
    }
}

/// Runs `body` on the capture behind `capture`, holding its lock. Refused while an in-place
/// append is pending, unless `duringInPlace` (the calls that cannot touch its buffer).
private func withCapture(_ capture: OpaquePointer?, duringInPlace: Bool = false,
                         _ body: (CaptureHandle) throws -> Void) throws {
    let handle = try Registry.capture(capture)
    try handle.lock.withLock {
        if handle.reserved != nil && !duringInPlace {
            throw APIError(PROVIDEO_E_INVALID_ARGUMENT, "an in-place append is pending: "
                           + "call provideo_capture_append_commit first (0 bytes abandons it)")
        }
        try body(handle)
    }
}

@c public func provideo_capture_append_begin(_ capture: OpaquePointer?, _ wanted: Int,
                                             _ piece: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
                                             _ pieceSize: UnsafeMutablePointer<Int>?,
                                             _ err: UnsafeMutablePointer<provideo_error>?) -> Int32 {
    apiCall(err) {
        try withCapture(capture, duringInPlace: true) { handle in
            let piece = try required(piece, "piece"), pieceSize = try required(pieceSize, "size")
            piece.pointee = nil
            pieceSize.pointee = 0
            handle.reserved = nil
            let room = try handle.capture.reserveInPlace(upTo: try size(wanted, "wanted"))
            handle.reserved = room.count
            piece.pointee = room.baseAddress
            pieceSize.pointee = room.count
        }
    }
}

@c public func provideo_capture_append_commit(_ capture: OpaquePointer?, _ count: Int, _ endOfFrame: Int32,
                                              _ err: UnsafeMutablePointer<provideo_error>?) -> Int32 {
    apiCall(err) {
        try withCapture(capture, duringInPlace: true) { handle in
            guard let reserved = handle.reserved else {
                throw APIError(PROVIDEO_E_INVALID_ARGUMENT, "no in-place append is pending: call provideo_capture_append_begin first")
            }
            let count = try size(count, "size")
            guard count <= reserved else {
                throw APIError(PROVIDEO_E_INVALID_ARGUMENT, "cannot commit \(count) bytes: \(reserved) were handed out")
            }
            handle.reserved = nil
            try handle.capture.commitInPlace(count, endsFrame: endOfFrame != 0)
        }
    }
}

@c public func provideo_capture_append(_ capture: OpaquePointer?, _ data: UnsafeRawPointer?, _ count: Int,
                                       _ err: UnsafeMutablePointer<provideo_error>?) -> Int32 {
    apiCall(err) {
        try withCapture(capture) { handle in
            let count = try size(count, "size")
            let data = count == 0 ? data : try required(data, "data")
            try handle.capture.append(UnsafeRawBufferPointer(start: data, count: count))
        }
    }
}

@c public func provideo_capture_append_in_place(_ capture: OpaquePointer?, _ count: Int, _ fill: provideo_fill_fn?,
                                                _ context: UnsafeMutableRawPointer?,
                                                _ err: UnsafeMutablePointer<provideo_error>?) -> Int32 {
    apiCall(err) {
        try withCapture(capture) { handle in
            let count = try size(count, "size")
            let fill = try required(fill, "fill")
            var offset = 0
            try handle.capture.append(count: count) { piece in
                fill(context, piece.baseAddress, piece.count, offset)
                offset += piece.count
            }
        }
    }
}

@c public func provideo_capture_write_at(_ capture: OpaquePointer?, _ offset: Int64, _ data: UnsafeRawPointer?,
                                         _ count: Int, _ err: UnsafeMutablePointer<provideo_error>?) -> Int32 {
    apiCall(err) {
        try withCapture(capture) { handle in
            let count = try size(count, "size")
            let data = count == 0 ? data : try required(data, "data")
            guard offset >= 0, offset <= Int64.max - Int64(count) else {
                throw APIError(PROVIDEO_E_INVALID_ARGUMENT, "cannot patch \(count) bytes at offset \(offset)")
            }
            try handle.capture.patch(UnsafeRawBufferPointer(start: data, count: count), at: offset)
        }
    }
}

@c public func provideo_capture_read(_ capture: OpaquePointer?, _ offset: Int64, _ buffer: UnsafeMutableRawPointer?,
                                     _ count: Int, _ outSize: UnsafeMutablePointer<Int>?,
                                     _ err: UnsafeMutablePointer<provideo_error>?) -> Int32 {
    apiCall(err) {
        try withCapture(capture) { handle in
            let outSize = try required(outSize, "out_size")
            outSize.pointee = 0
            let count = try size(count, "size")
            let buffer = count == 0 ? buffer : try required(buffer, "buffer")
            guard offset >= 0 else { throw APIError(PROVIDEO_E_INVALID_ARGUMENT, "cannot read at offset \(offset)") }
            // Nothing lies past Int64.max: a range reaching beyond it is cut there, not overflowed.
            let readable = min(count, Int(clamping: Int64.max - offset))
            outSize.pointee = try handle.capture.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: readable),
                                                      at: offset)
        }
    }
}

@c public func provideo_capture_poll(_ capture: OpaquePointer?, _ err: UnsafeMutablePointer<provideo_error>?) -> Int32 {
    apiCall(err) { try withCapture(capture) { try $0.capture.poll() } }
}

@c public func provideo_capture_finish(_ capture: OpaquePointer?, _ out: UnsafeMutablePointer<provideo_recording>?,
                                       _ err: UnsafeMutablePointer<provideo_error>?) -> Int32 {
    apiCall(err) {
        try withCapture(capture) { handle in
            let result = try handle.capture.finish()
            handle.ended = true
            if let out {
                out.pointee.length = result.length
                copy(result.path, into: &out.pointee.path)
            }
        }
    }
}

@c public func provideo_capture_cancel(_ capture: OpaquePointer?, _ err: UnsafeMutablePointer<provideo_error>?) -> Int32 {
    apiCall(err) {
        try withCapture(capture, duringInPlace: true) { handle in
            handle.reserved = nil
            try handle.capture.cancel()
            handle.ended = true
        }
    }
}

@c public func provideo_capture_get_statistics(_ capture: OpaquePointer?,
                                               _ out: UnsafeMutablePointer<provideo_capture_statistics>?,
                                               _ err: UnsafeMutablePointer<provideo_error>?) -> Int32 {
    apiCall(err) {
        try withCapture(capture, duringInPlace: true) { handle in
            let out = try required(out, "out")
            let capture = handle.capture, statistics = capture.statistics
            var c = provideo_capture_statistics()
            c.length = capture.length
            c.committed_length = capture.committedLength
            c.remaining_capacity = capture.remainingCapacity
            c.bytes = statistics.bytes
            c.frames = statistics.frames
            c.write_completions = statistics.writeCompletions
            c.short_writes_retried = statistics.shortWritesRetried
            c.overruns = statistics.overruns
            c.overrun_failures = statistics.overrunFailures
            c.patches = statistics.patches
            c.commits = statistics.commits
            let latency = statistics.appendLatency.summary
            c.append_latency_p50_ns = latency.p50
            c.append_latency_p99_ns = latency.p99
            c.append_latency_max_ns = latency.max
            copy(statistics.engine, into: &c.engine)
            out.pointee = c
        }
    }
}

@c public func provideo_capture_close(_ capture: OpaquePointer?, _ err: UnsafeMutablePointer<provideo_error>?) -> Int32 {
    apiCall(err) {
        guard case .capture(let handle)? = Registry.remove(capture, { if case .capture = $0 { true } else { false } }) else {
            throw Registry.invalid(capture, "capture")
        }
        // A capture dropped unfinished gives its capacity back. If that fails (a write had
        // failed), freeing the capture still closes its files and so its busy lock, and
        // `provideo recover` salvages the committed bytes.
        try handle.lock.withLock {
            if !handle.ended {
                handle.ended = true
                do { try handle.capture.cancel() } catch let error as ProVideoError where error.code == .captureClosed {}
            }
        }
    }
}

extension CaptureOptions {
    /// The C form of these options.
    var c: provideo_capture_options {
        var options = provideo_capture_options()
        options.bitrate = bitrate
        options.buffer_budget = Int64(bufferBudget ?? 0)
        options.durability_interval_ns = durabilityInterval
        switch overrunPolicy {
        case .fail:
            options.overrun_policy = Int32(PROVIDEO_OVERRUN_FAIL)
            options.overrun_wait_ns = 2_000_000_000
        case .wait(let nanoseconds):
            options.overrun_policy = Int32(PROVIDEO_OVERRUN_WAIT)
            options.overrun_wait_ns = nanoseconds
        }
        options.landing = switch landing {
        case .automatic: UInt32(PROVIDEO_LANDING_AUTOMATIC)
        case .inFinish: UInt32(PROVIDEO_LANDING_FINISH)
        case .background: UInt32(PROVIDEO_LANDING_BACKGROUND)
        }
        return options
    }

    /// Options from their C form, checked: a bad field is an error, not a trap later.
    init(c options: provideo_capture_options) throws {
        func bad(_ message: String) -> APIError { APIError(PROVIDEO_E_INVALID_ARGUMENT, message) }
        guard options.bitrate > 0 else { throw bad("the bitrate must be more than 0 bit/s, not \(options.bitrate)") }
        guard options.buffer_budget >= 0, options.buffer_budget <= Int64(1) << 40 else {
            throw bad("the buffer budget \(options.buffer_budget) bytes is out of range (0 for the default)")
        }
        let policy: OverrunPolicy
        switch Int(options.overrun_policy) {
        case Int(PROVIDEO_OVERRUN_FAIL): policy = .fail
        case Int(PROVIDEO_OVERRUN_WAIT):
            guard options.overrun_wait_ns <= 30_000_000_000 else {
                throw bad("the overrun wait \(options.overrun_wait_ns) ns exceeds the 30 s stall limit")
            }
            policy = .wait(nanoseconds: options.overrun_wait_ns)
        default: throw bad("unknown overrun policy \(options.overrun_policy)")
        }
        let landing: LandingMode
        switch Int(options.landing) {
        case Int(PROVIDEO_LANDING_AUTOMATIC): landing = .automatic
        case Int(PROVIDEO_LANDING_FINISH): landing = .inFinish
        case Int(PROVIDEO_LANDING_BACKGROUND): landing = .background
        default: throw bad("unknown landing \(options.landing) (PROVIDEO_LANDING_AUTOMATIC, _FINISH or _BACKGROUND)")
        }
        self.init(bitrate: options.bitrate, bufferBudget: options.buffer_budget == 0 ? nil : Int(options.buffer_budget),
                  durabilityInterval: options.durability_interval_ns, overrunPolicy: policy)
        self.landing = landing
    }
}

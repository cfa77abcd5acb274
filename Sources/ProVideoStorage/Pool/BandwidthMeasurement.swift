import Glibc

/// The pool's durable write bandwidth: what captures are admitted against (`Pool.bandwidth`).
extension Pool {
    /// Measures the durable write bandwidth of the pool's device by writing its own reserve
    /// for `nanoseconds` (1 s by default) or 16 times the reserve's size (at least 64 MiB),
    /// whichever comes first (a small pool is measured briefly): `O_DIRECT` writes of 4 MiB, four in flight, through
    /// the engine captures use (io_uring, else pwrite), an fdatasync after every 256 MiB and at
    /// the end, which the time includes. The reserve's content is not the recordings', so
    /// nothing is lost; it stays allocated and written. Busy reason `adjustingCapacity` while
    /// it runs (no capture may start).
    ///
    /// A short sequential write is the device's best case: captures are admitted against
    /// `admissibleShare` of it. On a device shared with other work, set the figure with
    /// `setBandwidth(_:)` instead.
    /// - Returns: bits per second.
    /// - Throws: `.busy` (captures run, or a resize or replenish); `.notEnoughSpace` when the
    ///   reserve is smaller than one write; `.ioError`.
    package func measureBandwidth(nanoseconds: UInt64 = 1_000_000_000) throws -> Int64 {
        try whileBusy(.adjustingCapacity, action: "measure the pool's bandwidth") {
            let writeSize = 4 << 20, inFlight = 4
            let span = try reserve(layout.reserve).size() / Int64(writeSize) * Int64(writeSize)
            guard span > 0 else {
                throw ProVideoError(.notEnoughSpace, "the reserve is smaller than one \(writeSize)-byte write: "
                                    + "measure with a larger pool, or set the bandwidth", path: path)
            }
            guard let memory = AlignedBuffer(length: writeSize * inFlight, alignment: directIOAlignment.memory) else {
                throw ProVideoError(.ioError, "cannot allocate \(writeSize * inFlight) bytes to measure with")
            }
            memory.bytes.initializeMemory(as: UInt8.self, repeating: 0)
            let buffers = (0..<inFlight).map { UnsafeMutableRawBufferPointer(rebasing: memory.bytes[$0 * writeSize..<($0 + 1) * writeSize]) }
            let file = try FileDescriptor.open(layout.reserve, O_WRONLY, direct: true)
            let engine = try WriteEngineFactory.make(.automatic, buffers: buffers, queueDepth: inFlight, calls: calls)
            defer { _ = engine.shutdown(waitNanoseconds: 30_000_000_000) }
            let started = MonotonicTime.now()
            var written: Int64 = 0, sinceSync: Int64 = 0, offset: Int64 = 0, pending = 0
            func issue(_ slot: Int) throws {
                try engine.queueWrite(fd: file.rawValue, slot: slot, address: UnsafeRawPointer(buffers[slot].baseAddress!),
                                      length: writeSize, offset: offset, tag: UInt64(slot))
                offset = (offset + Int64(writeSize)) % span
                pending += 1
            }
            func reap() throws -> Int {
                guard let completion = try engine.nextCompletion(waitNanoseconds: 30_000_000_000) else {
                    throw ProVideoError(.ioError, "a write to measure the bandwidth did not complete within 30 s",
                                        path: file.path)
                }
                pending -= 1
                guard completion.result == Int32(writeSize) else {
                    throw ProVideoError.system("write", errno: completion.result < 0 ? -completion.result : EIO, path: file.path)
                }
                written += Int64(writeSize)
                sinceSync += Int64(writeSize)
                return Int(completion.tag)
            }
            for slot in 0..<inFlight { try issue(slot) }
            try engine.submit()
            let byteLimit = max(span * 16, 64 << 20)
            while MonotonicTime.now() - started < nanoseconds && written < byteLimit {
                let slot = try reap()
                if sinceSync >= 256 << 20 {
                    while pending > 0 { _ = try reap() }
                    try file.sync(calls)
                    sinceSync = 0
                    for again in 0..<inFlight { try issue(again) }
                } else {
                    try issue(slot)
                }
                try engine.submit()
            }
            while pending > 0 { _ = try reap() }
            try file.sync(calls)
            let elapsed = max(MonotonicTime.now() - started, 1)
            return Int64(Double(written) * 8 / (Double(elapsed) / 1e9))
        }
    }

    /// Sets the bandwidth captures are admitted against, in bits per second; nil removes it
    /// (every capture is admitted). Captures already running are not affected.
    /// - Throws: `.invalidArgument` for a bandwidth ≤ 0; `.busy` while a resize runs.
    package func setBandwidth(_ bitsPerSecond: Int64?) throws {
        if let bitsPerSecond, bitsPerSecond < 1 {
            throw ProVideoError(.invalidArgument, "the bandwidth must be more than 0 bit/s, not \(bitsPerSecond)")
        }
        try lock.withMutation {
            guard !(try lock.heldByOthers().contains(.adjustingCapacity)) else {
                throw busyError(.adjustingCapacity, action: "set the pool's bandwidth")
            }
            configuration = try PoolConfiguration.load(layout.configuration)
            configuration.bandwidth = bitsPerSecond
            try configuration.save(layout.configuration, calls, access: access)
        }
    }
}

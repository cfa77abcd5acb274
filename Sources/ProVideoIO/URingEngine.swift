import ProVideoSystem

/// The io_uring engine (liburing): writes as `IORING_OP_WRITE_FIXED` on registered buffers
/// (`IORING_OP_WRITE` when registration fails, e.g. `ENOMEM` under a small memlock limit),
/// flushes as `IORING_OP_FSYNC` with `IORING_FSYNC_DATASYNC`.
package final class URingEngine: WriteEngine {
    private let ring: IOURing
    private let calls: SystemCalls
    private let registered: Bool
    /// Bytes each in-flight write asked for, by tag, for `SystemCalls.writeCompletion`.
    /// Room made up front: the write path does not allocate.
    private var requested: [UInt64: Int32]

    package let name: String

    package init(entries: Int, buffers: [UnsafeMutableRawBufferPointer], calls: SystemCalls) throws {
        ring = try IOURing(entries: entries)
        self.calls = calls
        registered = ring.registerBuffers(buffers) == 0
        let started = ring.startWorker()
        if started < 0 { throw ProVideoError.system("io_uring_enter", errno: -started) }
        name = registered ? "io_uring" : "io_uring (unregistered buffers)"
        requested = [:]
        requested.reserveCapacity(entries * 2)
    }

    package func queueWrite(fd: Int32, slot: Int, address: UnsafeRawPointer, length: Int, offset: Int64, tag: UInt64) throws {
        requested[tag] = Int32(length)
        try queue { ring.prepareWrite(fd: fd, address: address, length: length, offset: offset,
                                             slot: registered ? Int32(slot) : -1, tag: tag) }
    }

    package func queueDataSync(fd: Int32, tag: UInt64) throws {
        try queue { ring.prepareDataSync(fd: fd, tag: tag) }
    }

    /// Queues one SQE, submitting first when the submission queue is full.
    private func queue(_ prep: () -> Int32) throws {
        if prep() == 0 { return }
        try submit()
        let rc = prep()
        if rc < 0 { throw ProVideoError.system("io_uring_get_sqe", errno: -rc) }
    }

    package func submit() throws {
        let rc = ring.submit()
        if rc < 0 { throw ProVideoError.system("io_uring_submit", errno: -rc) }
    }

    package func nextCompletion(waitNanoseconds: Int64) throws -> EngineCompletion? {
        var tag: UInt64 = 0
        var result: Int32 = 0
        let rc = ring.nextCompletion(waitNanoseconds: waitNanoseconds, tag: &tag, result: &result)
        if rc < 0 { throw ProVideoError.system("io_uring_wait_cqe", errno: -rc) }
        guard rc == 1 else { return nil }
        if let length = requested.removeValue(forKey: tag) { result = calls.writeCompletion(length, result) }
        return EngineCompletion(tag: tag, result: result)
    }

    package func cancelAll(tag: UInt64) throws {
        try queue { ring.prepareCancelAll(tag: tag) }
        try submit()
    }

    package func shutdown(waitNanoseconds: Int64) -> Bool { true }
}

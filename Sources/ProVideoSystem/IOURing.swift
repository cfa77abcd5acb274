import CProVideo

/// One io_uring instance (liburing, through the C shim): the thin layer under `URingEngine`.
/// Each method is one liburing call and returns what it returns: 0 or a count, or a negative
/// errno value.
package final class IOURing {
    private let ring: OpaquePointer

    /// io_uring_queue_init(3) with `entries` SQEs.
    /// - Throws: the errno (EPERM: `kernel.io_uring_disabled`; ENOSYS or EPERM: seccomp;
    ///   ENOMEM: the memlock limit) as a `ProVideoError`.
    package init(entries: Int) throws {
        var error: Int32 = 0
        guard let ring = pv_ring_create(UInt32(entries), &error) else {
            throw ProVideoError.system("io_uring_queue_init", errno: -error)
        }
        self.ring = ring
    }

    deinit { pv_ring_destroy(ring) }

    /// io_uring_register_buffers(3).
    package func registerBuffers(_ buffers: [UnsafeMutableRawBufferPointer]) -> Int32 {
        var bases = buffers.map { UnsafeMutableRawPointer($0.baseAddress) }
        return pv_ring_register_buffers(ring, &bases, buffers.map(\.count), UInt32(buffers.count))
    }

    /// Starts the io-wq worker now (an async NOP), not in the first write.
    package func startWorker() -> Int32 { pv_ring_start_worker(ring) }

    /// io_uring_prep_write_fixed(3) (`slot` ≥ 0) or io_uring_prep_write(3); -EBUSY when the
    /// submission queue is full.
    package func prepareWrite(fd: Int32, address: UnsafeRawPointer, length: Int, offset: Int64, slot: Int32, tag: UInt64) -> Int32 {
        pv_ring_prep_write(ring, fd, address, UInt32(length), offset, slot, tag)
    }

    /// io_uring_prep_fsync(3) with `IORING_FSYNC_DATASYNC`.
    package func prepareDataSync(fd: Int32, tag: UInt64) -> Int32 { pv_ring_prep_fdatasync(ring, fd, tag) }

    /// io_uring_prep_cancel(3) with `IORING_ASYNC_CANCEL_ANY`.
    package func prepareCancelAll(tag: UInt64) -> Int32 { pv_ring_prep_cancel_all(ring, tag) }

    /// io_uring_submit(3).
    package func submit() -> Int32 { pv_ring_submit(ring) }

    /// io_uring_wait_cqe_timeout(3) (or io_uring_peek_cqe(3) when `waitNanoseconds` ≤ 0), then
    /// io_uring_cqe_seen(3): 1 with the CQE's tag and result, 0 when none came in time.
    package func nextCompletion(waitNanoseconds: Int64, tag: inout UInt64, result: inout Int32) -> Int32 {
        waitNanoseconds <= 0 ? pv_ring_peek(ring, &tag, &result) : pv_ring_wait(ring, waitNanoseconds, &tag, &result)
    }
}

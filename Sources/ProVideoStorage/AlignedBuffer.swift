import Glibc

/// Memory for direct I/O: `length` bytes at an address aligned to at least `alignment` and to
/// the page size (registered io_uring buffers are pinned per page). Freed on deinit.
final class AlignedBuffer {
    let bytes: UnsafeMutableRawBufferPointer

    init?(length: Int, alignment: Int) {
        var pointer: UnsafeMutableRawPointer?
        let boundary = max(alignment, Int(sysconf(Int32(_SC_PAGESIZE))))
        guard length > 0, posix_memalign(&pointer, boundary, length) == 0, let pointer else { return nil }
        bytes = UnsafeMutableRawBufferPointer(start: pointer, count: length)
    }

    deinit { free(bytes.baseAddress) }
}

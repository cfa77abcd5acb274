import Glibc

/// Memory for direct I/O: `length` bytes at an address aligned to at least `alignment` and to
/// the page size (registered io_uring buffers are pinned per page), every page touched before
/// the first write. Freed on deinit.
///
/// A buffer of at least one transparent huge page (`hpage_pmd_size`, 2 MiB on x86-64) is
/// aligned to it and advised `MADV_HUGEPAGE`: a write's DMA segments are then its huge pages,
/// not its 4 KiB pages. A device with a small segment limit (virtio-blk here:
/// `queue/max_segments` 254) otherwise splits every 4 MiB write into five requests; measured
/// on this machine, the average request grew from 779 KiB to 3,532 KiB and the engine's
/// sequential bandwidth from 1.0 to 3.3 GB/s (Docs/BENCHMARKS.md). Without transparent huge
/// pages (`enabled` = never) the advice has no effect and the buffer uses small pages.
final class AlignedBuffer {
    let bytes: UnsafeMutableRawBufferPointer

    init?(length: Int, alignment: Int) {
        guard length > 0 else { return nil }
        let hugePage = Self.hugePageSize
        let huge = length >= hugePage
        let boundary = max(alignment, huge ? hugePage : Int(sysconf(Int32(_SC_PAGESIZE))))
        let allocated = huge ? (length + hugePage - 1) / hugePage * hugePage : length
        var pointer: UnsafeMutableRawPointer?
        guard posix_memalign(&pointer, boundary, allocated) == 0, let pointer else { return nil }
        if huge { _ = madvise(pointer, allocated, MADV_HUGEPAGE) }
        // Fault every page in now, so no write path ever waits for a page fault.
        memset(pointer, 0, allocated)
        bytes = UnsafeMutableRawBufferPointer(start: pointer, count: length)
    }

    deinit { free(bytes.baseAddress) }

    /// Bytes per transparent huge page, from sysfs; 2 MiB when the file is missing.
    static let hugePageSize = FileSystem.readInteger("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size") ?? 2 << 20
}

import Glibc

/// Memory for direct I/O: `length` bytes at an address aligned to at least `alignment` and to
/// the page size (registered io_uring buffers are pinned per page), zeroed, every page faulted
/// in before the first write unless `populated` is false. Unmapped on deinit.
///
/// A buffer of at least one transparent huge page (`hpage_pmd_size`, 2 MiB on x86-64) is
/// aligned to it and advised `MADV_HUGEPAGE`: a write's DMA segments are then its huge pages,
/// not its 4 KiB pages. A device with a small segment limit (virtio-blk here:
/// `queue/max_segments` 254) otherwise splits every 4 MiB write into five requests; measured
/// on this machine, the average request grew from 779 KiB to 3,532 KiB and the engine's
/// sequential bandwidth from 1.0 to 3.3 GB/s (Docs/BENCHMARKS.md). Without transparent huge
/// pages (`enabled` = never) the advice has no effect and the buffer uses small pages.
/// `@unchecked Sendable`: it is memory handed from owner to owner (`RingMemory`), never shared.
package final class AlignedBuffer: @unchecked Sendable {
    package let bytes: UnsafeMutableRawBufferPointer
    /// The whole mapping: `bytes` rounded up to the page or huge page.
    private let mapping: UnsafeMutableRawBufferPointer

    /// `populated: false` leaves the pages to fault in when first touched, small pages
    /// (`MADV_NOHUGEPAGE`), for memory a slow path uses rarely and mostly in part (a write's
    /// patch window): only the pages it touches become resident.
    package init?(length: Int, alignment: Int, populated: Bool = true) {
        guard length > 0 else { return nil }
        let hugePage = Self.hugePageSize
        let huge = length >= hugePage
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let boundary = max(alignment, huge ? hugePage : page)
        let unit = huge ? hugePage : page
        let allocated = (length + unit - 1) / unit * unit
        // A fresh anonymous mapping (zero pages, never memory recycled from the heap), one
        // boundary larger so an aligned start exists inside it; the excess is unmapped.
        guard let raw = mmap(nil, allocated + boundary, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
              raw != MAP_FAILED else { return nil }
        let address = UInt(bitPattern: raw)
        let start = (address + UInt(boundary) - 1) / UInt(boundary) * UInt(boundary)
        let head = Int(start - address)
        if head > 0 { munmap(raw, head) }
        if boundary - head > 0 { munmap(raw + head + allocated, boundary - head) }
        let pointer = raw + head
        if huge, populated { _ = madvise(pointer, allocated, MADV_HUGEPAGE) }
        // Where transparent huge pages are `always`, a first touch would fault in 2 MiB.
        if !populated { _ = madvise(pointer, allocated, MADV_NOHUGEPAGE) }
        // Fault every page in now, so no write path ever waits for a page fault. The kernel
        // populates zeroed pages itself (MADV_POPULATE_WRITE, Linux 5.14), without a pass over
        // every byte from here; touching each page is the fallback for older kernels.
        if populated, madvise(pointer, allocated, MADV_POPULATE_WRITE) != 0 {
            for offset in stride(from: 0, to: allocated, by: page) { pointer.storeBytes(of: 0, toByteOffset: offset, as: UInt8.self) }
        }
        mapping = UnsafeMutableRawBufferPointer(start: pointer, count: allocated)
        bytes = UnsafeMutableRawBufferPointer(start: pointer, count: length)
    }

    deinit { munmap(mapping.baseAddress, mapping.count) }

    /// Sets every byte to 0 (memset(3): in any build, not a loop of Swift stores).
    package func zero() { memset(mapping.baseAddress!, 0, mapping.count) }

    /// Whether its address is a multiple of `alignment`.
    package func isAligned(to alignment: Int) -> Bool {
        alignment > 0 && Int(bitPattern: bytes.baseAddress) % alignment == 0
    }

    /// Bytes per transparent huge page, from sysfs; 2 MiB when the file is missing.
    package static let hugePageSize = FileSystem.readInteger("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size") ?? 2 << 20
}

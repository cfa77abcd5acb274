import Glibc

/// Memory at an address aligned for `O_DIRECT`, allocated once before a run and freed on
/// deinit. Zero-filled so that its pages are resident before the clock starts.
package final class AlignedMemory: @unchecked Sendable {
    package let bytes: UnsafeMutableRawBufferPointer

    /// - Parameters:
    ///   - length: bytes.
    ///   - alignment: bytes; raised to the page size.
    package init(length: Int, alignment: Int) throws {
        var pointer: UnsafeMutableRawPointer?
        let boundary = max(alignment, Int(sysconf(Int32(_SC_PAGESIZE))))
        guard length > 0, posix_memalign(&pointer, boundary, length) == 0, let pointer else {
            throw BenchError("cannot allocate \(length) bytes aligned to \(boundary)")
        }
        bytes = UnsafeMutableRawBufferPointer(start: pointer, count: length)
        bytes.initializeMemory(as: UInt8.self, repeating: 0)
    }

    deinit { free(bytes.baseAddress) }
}

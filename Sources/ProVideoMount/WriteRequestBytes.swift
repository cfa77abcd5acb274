import CProVideoMount
import ProVideoStorage

/// The data of one write request, taken once and in order into wherever it goes. A `write_buf`
/// request's data may still be in the pipe libfuse spliced it into from /dev/fuse
/// (FUSE_CAP_SPLICE_READ, on by default for a filesystem with `write_buf`): an append then
/// reads it straight into the capture's buffers, one copy where `write` needs two (libfuse's
/// copy into a buffer of its own, then the capture's).
final class WriteRequestBytes {
    private let request: UnsafeMutablePointer<fuse_bufvec>
    /// Bytes in the request.
    let count: Int
    /// Bytes taken so far.
    private(set) var taken = 0
    /// Whether a take found fewer bytes than it asked for (a failed read of the pipe): the
    /// piece was filled with zeros, so the request must fail.
    private(set) var failed = false

    init(_ request: UnsafeMutablePointer<fuse_bufvec>) {
        self.request = request
        count = fuse_buf_size(request)
    }

    /// Fills `piece` with the next `piece.count` bytes; never fails (a piece the pipe could not
    /// fill is zero-filled and `failed` set), as `Capture.append(count:filling:)` requires.
    func take(into piece: UnsafeMutableRawBufferPointer) {
        precondition(taken + piece.count <= count, "a write request's data is taken past its end")
        var copied = 0
        while copied < piece.count {
            let result = pv_fuse_buf_take(request, piece.baseAddress! + copied, piece.count - copied)
            guard result > 0 else { break }
            copied += result
        }
        if copied < piece.count {
            (piece.baseAddress! + copied).initializeMemory(as: UInt8.self, repeating: 0, count: piece.count - copied)
            failed = true
        }
        taken += piece.count
    }

    /// Runs `body` with the next `size` bytes in one piece of memory (for a patch or a plain
    /// file's pwrite, which need the bytes together: a copy more, off the streaming path).
    /// - Throws: `.ioError` when the pipe could not give them; what `body` throws.
    func withNext<T>(_ size: Int, _ body: (UnsafeRawBufferPointer) throws -> T) throws -> T {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
        defer { buffer.deallocate() }
        take(into: buffer)
        try throwIfFailed()
        return try body(UnsafeRawBufferPointer(buffer))
    }

    /// - Throws: `.ioError` once a take came up short.
    func throwIfFailed() throws {
        guard failed else { return }
        throw ProVideoError(.ioError, "the data of a write request could not be read from libfuse's pipe")
    }
}

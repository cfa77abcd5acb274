import CProVideo

/// SHA-256 (libcrypto's EVP interface, through the C shim) of a byte stream.
package final class SHA256 {
    private var context: OpaquePointer?

    /// - Throws: `.ioError` when libcrypto cannot be initialised or allocate a context.
    package init() throws {
        guard let context = pv_sha256_new() else { throw ProVideoError(.ioError, "libcrypto cannot start a SHA-256 digest (out of memory?)") }
        self.context = context
    }

    /// Frees the context when `finish()` was never reached (a read failed): no leak on any path.
    deinit {
        if context != nil { _ = finish() }
    }

    package func update(_ bytes: UnsafeRawBufferPointer) {
        pv_sha256_update(context, bytes.baseAddress, bytes.count)
    }

    /// The 32-byte digest; frees the context.
    package func finish() -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        pv_sha256_finish(context, &digest)
        context = nil
        return digest
    }
}

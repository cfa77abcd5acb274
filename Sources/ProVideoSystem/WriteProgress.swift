import Glibc

/// The bytes of one write confirmed on disk so far, and what to do with a completion that
/// reports fewer than asked (legal for io_uring and pwrite(2); field case F1).
///
/// A short completion is resubmitted from the last boundary of `alignment` it reached, since
/// an `O_DIRECT` write must start aligned: the partial block is written again whole (F2). A
/// completion that makes no progress (0 bytes, less than one block, `-EAGAIN`, `-EINTR`) is
/// retried at most `maximumRetries` times in a row, then reported: never an endless loop.
package struct WriteProgress: Equatable {
    /// Bytes the write asks for.
    package let length: Int
    /// Bytes confirmed, a multiple of the alignment until the write is complete.
    package private(set) var done = 0
    package private(set) var retries = 0

    package static let maximumRetries = 32

    package init(length: Int) { self.length = length }

    package var isComplete: Bool { done == length }

    /// Applies a completion's result (bytes, or -errno) for the request `done..<length`.
    /// - Returns: true when the write is complete; false when the rest must be resubmitted.
    /// - Throws: the errno of a failed write as `.ioError`/`.notEnoughSpace`; `.ioError` after
    ///   `maximumRetries` completions in a row without progress.
    package mutating func apply(_ result: Int32, alignment: Int, call: String, path: String) throws -> Bool {
        let remaining = length - done
        if result >= remaining {
            done = length
            return true
        }
        // ECANCELED without our cancellation (after ours nothing is resubmitted): io_uring cancels
        // a request its io-wq worker still held when the thread that submitted it exited (a C
        // program appending from short-lived threads); the bytes are still ours to write.
        if result < 0 && result != -EAGAIN && result != -EINTR && result != -ECANCELED {
            throw ProVideoError.system(call, errno: -result, path: path)
        }
        let reached = result > 0 ? (done + Int(result)) / alignment * alignment : done
        if reached > done {
            done = reached
            retries = 0
            return false
        }
        retries += 1
        guard retries <= Self.maximumRetries else {
            throw ProVideoError(.ioError, "a \(call) of \(remaining) bytes made no progress after \(Self.maximumRetries) "
                                + "retries (last result \(result))", path: path)
        }
        return false
    }
}

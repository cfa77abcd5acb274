import Glibc
import ProVideoSystem

/// The progress block, `captures/<id>/progress`: one aligned block whose first 8 bytes are the
/// capture's length, little-endian (then its counters, `CaptureCounters`), rewritten by the
/// capture at most every 250 ms for other processes.
extension CaptureJournal {
    /// Reads a capture's published length, in bytes, from its progress block; nil when the
    /// file is gone (the capture finished or was discarded meanwhile). Read from disk, so
    /// range-checked before any arithmetic uses it.
    /// - Throws: the read's error (`.ioError`, `.permissionDenied`); `.corruptState` for a
    ///   block of 1 to 7 bytes or a length no pool could reach (above
    ///   `maximumLength`). An unreadable length is unknown, never 0.
    package static func readWritten(_ path: String) throws -> Int64? {
        let bytes: [UInt8]
        do {
            bytes = try FileSystem.readSmallFile(path)
        } catch let error as ProVideoError where error.errno == ENOENT {
            return nil
        }
        // Empty: a capture between the block's create and its fallocate (`createCaptureFiles`),
        // before its data file exists; nothing shrinks a block once allocated, so it has
        // written nothing. 1 to 7 bytes no step of the capture leaves.
        if bytes.isEmpty { return 0 }
        guard bytes.count >= 8, word(bytes, at: 0) <= UInt64(maximumLength) else {
            throw ProVideoError(.corruptState, "the progress block \(path) holds no length a capture could have written "
                                + "(\(bytes.count) bytes)", path: path)
        }
        return Int64(word(bytes, at: 0))
    }

    /// A running capture's length (bytes written), committed length and counters as one
    /// snapshot for another process: the commit record is read first, then the progress block,
    /// once. The capture commits only bytes it has written, but it publishes its length at
    /// most every 250 ms, while a commit record is written as soon as its fdatasync completes:
    /// read the other way round, or between a commit and the next publication, a capture showed
    /// more committed than written. Committed bytes were written: the length is never less.
    /// - Returns: bytes written and committed; the counters, nil before the first publication.
    package static func snapshot(commit: String, progress: String) -> (written: Int64, committed: Int64, counters: CaptureCounters?) {
        let committed = readCommitted(commit)
        let block = (try? FileSystem.readSmallFile(progress)) ?? []
        return (max(counter(in: block), committed), committed, CaptureCounters(block: block))
    }

    /// The length in a progress block's first 8 bytes; 0 when it is short or out of range.
    private static func counter(in bytes: [UInt8]) -> Int64 {
        guard bytes.count >= 8 else { return 0 }
        let count = word(bytes, at: 0)
        return count <= UInt64(maximumLength) ? Int64(count) : 0
    }

    package static func word(_ bytes: [UInt8], at start: Int) -> UInt64 {
        (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[start + $1]) << (8 * $1) }
    }
}

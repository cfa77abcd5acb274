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
    /// - Returns: bytes written and committed; the counters, nil before the first publication;
    ///   `unknown`, why the figures are floors rather than the capture's (a commit record that
    ///   is torn or cannot be read, a progress block that cannot be read or holds no length):
    ///   what cannot be read is never shown as 0 without saying so. Files that are gone (the
    ///   capture ended since it was listed) read as nothing, with no reason.
    package static func snapshot(commit: String, progress: String)
        -> (written: Int64, committed: Int64, counters: CaptureCounters?, unknown: String?) {
        var unknown: [String] = []
        var committed: Int64 = 0
        switch readCommitRecord(commit) {
        case .length(let length) where length <= maximumLength: committed = length
        case .length(let length): unknown.append("its commit record claims \(length) bytes, more than any pool holds")
        case .torn: unknown.append("its commit record is torn (no record's check word matches)")
        case .unreadable(let error): unknown.append("its commit record cannot be read (\(error.message))")
        case .missing: break
        }
        var block: [UInt8] = []
        do {
            block = try FileSystem.readSmallFile(progress)
        } catch let error as ProVideoError where error.errno == ENOENT {
        } catch {
            unknown.append("its progress block cannot be read (\((error as? ProVideoError)?.message ?? "\(error)"))")
        }
        if !block.isEmpty && (block.count < 8 || word(block, at: 0) > UInt64(maximumLength)) {
            unknown.append("its progress block holds no length a capture could have written (\(block.count) bytes)")
        }
        return (max(counter(in: block), committed), committed, CaptureCounters(block: block),
                unknown.isEmpty ? nil : unknown.joined(separator: "; "))
    }

    /// The length in a progress block's first 8 bytes; 0 when it is short or out of range
    /// (`snapshot` says so).
    private static func counter(in bytes: [UInt8]) -> Int64 {
        guard bytes.count >= 8 else { return 0 }
        let count = word(bytes, at: 0)
        return count <= UInt64(maximumLength) ? Int64(count) : 0
    }

    package static func word(_ bytes: [UInt8], at start: Int) -> UInt64 {
        (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[start + $1]) << (8 * $1) }
    }
}

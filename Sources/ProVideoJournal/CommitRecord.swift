import Glibc
import ProVideoSystem

/// The commit records, `captures/<id>/commit`: two 16-byte records in separate sectors, each
/// the committed length and its check word, written with `O_DSYNC` only after the data's
/// fdatasync (`CommitPipeline`). Salvage believes the larger record whose check word matches.
extension CaptureJournal {
    /// Offsets of the two commit records: separate sectors, so one torn write spoils one only.
    package static let commitSlots: [Int64] = [0, 512]

    /// What a capture's `commit` file proves (`readCommitRecord`).
    package enum CommitRecordState: Equatable, Sendable {
        /// A record whose check word matches: the larger of the two (the committed length only
        /// grows); 0 when the file is readable and holds no record at all (never committed:
        /// zeros, as `fallocate` left it).
        case length(Int64)
        /// Readable, but no record's check word matches and the bytes are not all zero (a torn
        /// or garbled write), or the file is shorter than the pool made it (cut by someone
        /// else). What was committed is unknown.
        case torn
        /// The file cannot be read (a link, another file type, too large, `EACCES`, `EIO`).
        case unreadable(ProVideoError)
        /// There is no `commit` file.
        case missing
    }

    /// Reads what `path` (a `commit` file) proves of the committed length; nothing read is
    /// taken for 0 (Docs/CAPTURE-LIFECYCLE.md, "Recovery decides on proof"). A matching record
    /// past `Int64.max` reads as `Int64.max`: a salvage keeps no more than `data` holds, and
    /// says so.
    /// - Parameter expected: which file the capture's journal recorded as its `commit`
    ///   (`commitIdentity`); another file there is unreadable, whatever it holds.
    package static func readCommitRecord(_ path: String, expected: FileIdentity? = nil) -> CommitRecordState {
        let bytes: [UInt8]
        do {
            let read = try FileSystem.readSmallFileWithFacts(path)
            if let expected, !expected.matches(read.facts) {
                return .unreadable(ProVideoError(.corruptState, "\(path) is not the commit record this capture's journal "
                                                 + "recorded (another file: moved or linked from elsewhere)", path: path))
            }
            bytes = read.bytes
        } catch let error as ProVideoError {
            return error.errno == ENOENT ? .missing : .unreadable(error)
        } catch {
            return .unreadable(ProVideoError(.ioError, "\(path) cannot be read (\(error))", path: path))
        }
        // The pool makes the file whole (both slots, `createCaptureFiles`) before its journal: a
        // shorter one was cut by someone else, and its missing slot may have held the larger
        // record.
        guard bytes.count >= commitFileLength else { return .torn }
        let lengths = commitSlots.map { Int($0) }.compactMap { start -> Int64? in
            let length = word(bytes, at: start)
            return word(bytes, at: start + 8) == length ^ commitCheck ? Int64(clamping: length) : nil
        }
        if let committed = lengths.max() { return .length(committed) }
        return bytes.allSatisfy { $0 == 0 } ? .length(0) : .torn
    }

    /// Bytes of a `commit` file as a capture's start allocates it: both slots and the sector
    /// after the last one's start.
    package static let commitFileLength = Int(commitSlots.last!) + 512

    /// Bytes of one commit record: the length, then the length XOR `commitCheck`.
    package static let commitRecordLength = 16

    package static let commitCheck: UInt64 = 0x5052_4F56_4944_454F

    /// The 16-byte commit record for `length`.
    package static func commitRecord(_ length: Int64, into bytes: UnsafeMutableRawBufferPointer) {
        bytes.storeBytes(of: UInt64(bitPattern: length).littleEndian, toByteOffset: 0, as: UInt64.self)
        bytes.storeBytes(of: (UInt64(bitPattern: length) ^ commitCheck).littleEndian, toByteOffset: 8, as: UInt64.self)
    }
}

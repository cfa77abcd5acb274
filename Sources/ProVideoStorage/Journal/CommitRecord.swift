/// The commit records, `captures/<id>/commit`: two 16-byte records in separate sectors, each
/// the committed length and its check word, written with `O_DSYNC` only after the data's
/// fdatasync (`CommitPipeline`). Salvage believes the larger record whose check word matches.
extension CaptureJournal {
    /// Offsets of the two commit records: separate sectors, so one torn write spoils one only.
    static let commitSlots: [Int64] = [0, 512]

    /// Reads the committed length from `commit`: the larger of the two records whose check word
    /// matches (the committed length only grows), 0 when there is none. A length past
    /// `Int64.max` reads as `Int64.max`: a salvage keeps no more than `data` holds, and says so.
    package static func readCommitted(_ path: String) -> Int64 {
        guard let bytes = try? FileSystem.readSmallFile(path) else { return 0 }
        return commitSlots.map { Int($0) }.filter { $0 + 16 <= bytes.count }.map { start -> Int64 in
            let length = word(bytes, at: start)
            return word(bytes, at: start + 8) == length ^ commitCheck ? Int64(clamping: length) : 0
        }.max() ?? 0
    }

    /// Bytes of one commit record: the length, then the length XOR `commitCheck`.
    static let commitRecordLength = 16

    static let commitCheck: UInt64 = 0x5052_4F56_4944_454F

    /// The 16-byte commit record for `length`.
    static func commitRecord(_ length: Int64, into bytes: UnsafeMutableRawBufferPointer) {
        bytes.storeBytes(of: UInt64(bitPattern: length).littleEndian, toByteOffset: 0, as: UInt64.self)
        bytes.storeBytes(of: (UInt64(bitPattern: length) ^ commitCheck).littleEndian, toByteOffset: 8, as: UInt64.self)
    }
}

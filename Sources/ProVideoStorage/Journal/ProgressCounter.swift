/// The progress block, `captures/<id>/progress`: one aligned block whose first 8 bytes are the
/// capture's length, little-endian (then its counters, `CaptureCounters`), rewritten by the
/// capture at most every 250 ms for other processes.
extension CaptureJournal {
    /// Reads an 8-byte little-endian counter (`progress`), 0 if the file is missing, short, or
    /// holds a count no pool could reach (above `Pool.maximumCapacity`): it is read from disk, so
    /// it is range-checked before any arithmetic uses it.
    static func readCounter(_ path: String) -> Int64 {
        guard let bytes = try? FileSystem.readSmallFile(path), bytes.count >= 8 else { return 0 }
        let count = word(bytes, at: 0)
        return count <= UInt64(Pool.maximumCapacity) ? Int64(count) : 0
    }

    static func word(_ bytes: [UInt8], at start: Int) -> UInt64 {
        (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[start + $1]) << (8 * $1) }
    }
}

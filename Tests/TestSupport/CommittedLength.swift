import ProVideoStorage

extension CaptureJournal {
    /// The committed length a test reads back from a `commit` file: 0 when it proves none or
    /// claims more than any pool holds. The library never reads it so: recovery decides on
    /// `readCommitRecord`, and `status` says when a record cannot be read (`snapshot`).
    package static func readCommitted(_ path: String) -> Int64 {
        if case .length(let committed) = readCommitRecord(path), committed <= maximumLength { return committed }
        return 0
    }
}

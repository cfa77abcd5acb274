import Glibc

/// Moves a finished recording to its destination, the one way both a finishing capture and
/// `provideo move` do: renameat2(2) with `RENAME_NOREPLACE` and both directories flushed; on
/// another filesystem (`EXDEV`, also between two mounts of one device) a verified copy
/// (`RecordingCopy`), after which the source is left for the caller (a capture's file goes
/// back to the reserve, a held recording is deleted). Nothing at the destination is ever
/// overwritten.
struct RecordingMove {
    let calls: SystemCalls

    enum Outcome: Equatable {
        /// The source file now is the destination.
        case renamed
        /// The destination is a verified, flushed copy; the source is still there.
        case copied
    }

    /// - Parameters:
    ///   - length: the recording's length in bytes (the source may be longer: a capture's file).
    ///   - tag: names the copy's temporary file (a capture id, a held recording's name).
    ///   - renaming: false to copy without trying a rename: a capture's file is renamed only
    ///     when it is sealed for its destination's filesystem (a btrfs subvolume would accept
    ///     the rename of a file that is not).
    /// - Throws: `.destinationExists` (errno EEXIST); a rename error; a copy error (the
    ///   temporary copy is removed, the source untouched).
    func move(_ source: String, length: Int64, to destination: String, tag: String, renaming: Bool = true) throws -> Outcome {
        let rc = renaming ? calls.renameNoReplace(source, destination) : -EXDEV
        if rc == 0 {
            try FileSystem.syncDirectory(FileSystem.parent(of: destination), calls)
            try FileSystem.syncDirectory(FileSystem.parent(of: source), calls)
            return .renamed
        }
        if rc == -EEXIST { throw Self.destinationExists(destination) }
        guard rc == -EXDEV else { throw ProVideoError.system("renameat2", errno: -rc, path: destination) }
        let file = try FileDescriptor.open(source, O_RDONLY)
        _ = try RecordingCopy.copy(file, length: length, to: destination, tag: tag, calls: calls)
        return .copied
    }

    static func destinationExists(_ destination: String) -> ProVideoError {
        ProVideoError(.destinationExists, "\(destination) already exists; it is never overwritten: choose another "
                      + "destination", errno: EEXIST, path: destination)
    }
}

import Glibc
import ProVideoSystem
import ProVideoJournal

/// Moves a finished recording to its destination, the one way both a finishing capture and
/// `provideo move` do: renameat2(2) with `RENAME_NOREPLACE` and both directories flushed; on
/// another filesystem (`EXDEV`, also between two mounts of one device) a verified copy
/// (`RecordingCopy`), after which the source is left for the caller (a capture's file goes
/// back to the reserve, a held recording is deleted). Nothing at the destination is ever
/// overwritten. Both directories are descriptors resolved before (`DirectoryHandle`), and every
/// step runs as the recording's owner: root moves a recording only where its owner could.
struct RecordingMove {
    let calls: SystemCalls
    /// The progress and cancellation of a copy (a rename reports nothing and is not stopped).
    let control: OperationControl

    enum Outcome: Equatable {
        /// The source file now is the destination.
        case renamed
        /// The destination is a verified, flushed copy, this file; the source is still there.
        case copied(FileIdentity)
    }

    /// The rename put the recording at its destination (it is gone from the source), but a
    /// directory flush after it failed: the name may not survive a power cut. Not a failure to
    /// place: the caller must not look for the recording where it was.
    struct PlacedUnflushed: Error {
        /// `.ioError` "placed at DEST, but the directory could not be flushed: …".
        let error: ProVideoError
    }

    /// - Parameters:
    ///   - source: the recording, `sourceName` in `sourceDirectory` (in the pool).
    ///   - length: the recording's length in bytes (the source may be longer: a capture's file).
    ///   - tag: names the copy's temporary file (a capture id, a held recording's name).
    ///   - renaming: false to copy without trying a rename: a capture's file is renamed only
    ///     when it is sealed for its destination's filesystem (a btrfs subvolume would accept
    ///     the rename of a file that is not).
    /// - Throws: `PlacedUnflushed` when the rename succeeded and a directory flush failed;
    ///   `.destinationExists` (errno EEXIST); a rename error (`.permissionDenied` when
    ///   the owner may not write there); a copy error (the temporary copy is removed, the
    ///   source untouched).
    func move(_ source: FileDescriptor, named sourceName: String, in sourceDirectory: DirectoryHandle, length: Int64,
              to name: String, in directory: DirectoryHandle, owner: RecordingOwner, tag: String,
              renaming: Bool = true) throws -> Outcome {
        try owner.acting {
            let rc = renaming ? calls.renameNoReplace(sourceDirectory.path(of: sourceName), directory.path(of: name)) : -EXDEV
            if rc == 0 {
                do {
                    try directory.sync(calls)
                    try sourceDirectory.sync(calls)
                } catch let failed as ProVideoError {
                    let placed = directory.display(name)
                    throw PlacedUnflushed(error: ProVideoError(
                        .ioError, "placed at \(placed), but the directory could not be flushed: \(failed.message). The "
                        + "recording is there; a power cut before the filesystem writes the directory could lose its "
                        + "name: run `sync`, then check it", errno: failed.errno, path: placed))
                }
                return .renamed
            }
            if rc == -EEXIST { throw Self.destinationExists(directory.display(name)) }
            guard rc == -EXDEV else { throw ProVideoError.system("renameat2", errno: -rc, path: directory.display(name)) }
            return .copied(try RecordingCopy.copy(source, length: length, to: name, in: directory, tag: tag, calls: calls,
                                                  control: control))
        }
    }

    static func destinationExists(_ destination: String) -> ProVideoError {
        ProVideoError(.destinationExists, "\(destination) already exists; it is never overwritten: choose another "
                      + "destination", errno: EEXIST, path: destination)
    }
}

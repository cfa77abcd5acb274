import Glibc

/// The rule for every read that decides: a file of a confined directory is evidence only when
/// it is of the type its owner makes there and, when it is a regular file, has one link (or
/// none: removed since it was opened). A link in its place, a directory, a FIFO, or a second
/// name of another file (a hard link, which `Confinement` cannot see: both names are beneath
/// the confined directory) is not the file it stands for: what it would say is unknown.
package enum EvidenceFile {
    /// Why `facts` (of `path`, not followed) cannot be evidence, or nil when it can.
    /// - Parameter expected: `S_IFREG` or `S_IFDIR`.
    package static func refusal(_ facts: FileFacts, expected: mode_t, path: String) -> ProVideoError? {
        let type = facts.mode & UInt32(S_IFMT)
        guard type == UInt32(expected) else {
            return ProVideoError(.corruptState, "\(path) is \(describe(type)), not "
                                 + (expected == S_IFDIR ? "a directory" : "a regular file"), path: path)
        }
        // No link at all is a file removed after it was opened (its owner ending): still itself.
        guard expected != S_IFREG || facts.linkCount <= 1 else {
            return ProVideoError(.corruptState, "\(path) has \(facts.linkCount) hard links: it may be another file's "
                                 + "second name, so what it says is not evidence of its own", path: path)
        }
        return nil
    }

    package static func describe(_ type: UInt32) -> String {
        switch type {
        case UInt32(S_IFLNK): "a symbolic link"
        case UInt32(S_IFDIR): "a directory"
        case UInt32(S_IFREG): "a regular file"
        case UInt32(S_IFIFO): "a FIFO"
        case UInt32(S_IFSOCK): "a socket"
        case UInt32(S_IFCHR), UInt32(S_IFBLK): "a device node"
        default: "of an unknown type"
        }
    }
}

import Glibc
import ProVideoSystem

/// Which file a take (or a capture's commit record) is: its filesystem's device and its
/// inode, its length and, for a copy, the SHA-256 its verification computed. A journal records
/// it before recovery may believe a claim of where the take is (`CaptureJournal.dataIdentity`,
/// `placedIdentity`) or a record of what it committed (`commitIdentity`): a path that holds a
/// file of the take's length, or a valid record, is no proof; the file it holds is
/// (Docs/CAPTURE-LIFECYCLE.md, "Evidence ranks").
package struct FileIdentity: Codable, Sendable, Equatable {
    package var deviceMajor: UInt32
    package var deviceMinor: UInt32
    package var inode: UInt64
    /// The take's length in bytes; nil for a capture's `data`, whose length is its commit
    /// record's.
    package var length: Int64?
    /// The SHA-256 of a copy's bytes, hex, as its verification computed it.
    package var sha256: String?

    package init(_ facts: FileFacts, length: Int64? = nil, sha256: String? = nil) {
        (deviceMajor, deviceMinor, inode) = (facts.deviceMajor, facts.deviceMinor, facts.inode)
        (self.length, self.sha256) = (length, sha256)
    }

    /// Whether `facts` (looked at without following a link) are this file's: a regular file
    /// on the same device with the same inode and, when recorded, the same length.
    package func matches(_ facts: FileFacts) -> Bool {
        facts.mode & UInt32(S_IFMT) == UInt32(S_IFREG) && facts.deviceMajor == deviceMajor
            && facts.deviceMinor == deviceMinor && facts.inode == inode
            && length.map { Int64(clamping: facts.size) == $0 } ?? true
    }

    /// Whether its numbers can be a file's (Docs/SECURITY.md rule 7: range-checked on read).
    var isInRange: Bool {
        length.map { $0 >= 0 && $0 <= CaptureJournal.maximumLength } ?? true
            && sha256.map { $0.utf8.count == 64 && $0.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) } } ?? true
    }
}

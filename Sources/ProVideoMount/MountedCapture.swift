import Foundation
import Glibc
import ProVideoStorage

/// A file created in a capture mount: one `Capture`, written by the FUSE requests of every
/// descriptor open on it, one request at a time (`lock`: a `Capture` has a single owner).
/// `write` at the end appends, below it patches, past it zero-fills the gap first; the last
/// descriptor's close finishes the capture, and a rename before that is applied to the landed
/// file (Docs/CAPTURE-MOUNT.md).
final class MountedCapture: @unchecked Sendable {
    let capture: Capture
    /// Where the capture's recording goes, relative to the destination directory.
    let destination: String
    /// Its name in the mount now, relative to the destination directory (a rename changes it).
    var name: String
    /// Who created it: the file's owner in the mount.
    let uid: uid_t, gid: gid_t
    let created = Date()
    /// Descriptors open on it (FUSE handles).
    var handles = 1
    /// Set once the capture is finished or cancelled: later requests get `EBADF`.
    var ended = false
    let lock = NSLock()

    init(capture: Capture, destination: String, uid: uid_t, gid: gid_t) {
        self.capture = capture
        self.destination = destination
        self.name = destination
        self.uid = uid
        self.gid = gid
    }

    /// The zeros a write past the end is preceded by, a piece at a time.
    private static let zeros = [UInt8](repeating: 0, count: 1 << 20)

    /// Writes `bytes` at `offset`: patches what lies below the recording's length, appends the
    /// rest (zero-filling a gap first). Returns the bytes taken, fewer than asked when the
    /// pool filled up in the middle (the next write gets `ENOSPC`).
    /// - Throws: what `append` and `patch` throw (`.storageFull` when nothing more fits).
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws -> Int {
        var length = capture.length
        while offset > length {
            let gap = Int(min(Int64(Self.zeros.count), offset - length))
            try Self.zeros.withUnsafeBytes { try capture.append(UnsafeRawBufferPointer(rebasing: $0[0..<gap])) }
            length += Int64(gap)
        }
        let below = min(bytes.count, Int(max(0, length - offset)))
        if below > 0 { try capture.patch(UnsafeRawBufferPointer(rebasing: bytes[0..<below]), at: offset) }
        guard below < bytes.count else { return below }
        let rest = UnsafeRawBufferPointer(rebasing: bytes[below...])
        do {
            try capture.append(rest)
            return bytes.count
        } catch let error as ProVideoError where error.code == .storageFull {
            // A frame is taken whole or not at all; a file write may be short: take what fits.
            let room = Int(min(Int64(rest.count), max(capture.remainingCapacity, 0)))
            guard room > 0, room < rest.count else {
                if below > 0 { return below }
                throw error
            }
            try capture.append(UnsafeRawBufferPointer(rebasing: rest[0..<room]))
            return below + room
        }
    }
}

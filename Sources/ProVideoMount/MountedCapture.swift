import Foundation
import Glibc
import ProVideoStorage

/// A file created in a capture mount: one `Capture`, written by the FUSE requests of every
/// descriptor open on it, one request at a time (`lock`: a `Capture` has a single owner).
/// `write` at the end appends, below it patches, past it zero-fills the gap first; the last
/// descriptor's close finishes the capture, and a rename before that is applied to the landed
/// file (Docs/CAPTURE-MOUNT.md).
final class MountedCapture: @unchecked Sendable {
    enum State {
        /// Taking writes.
        case open
        /// Its last writer closed: a thread of its own is finishing it (landing can take
        /// seconds per gigabyte on another filesystem); requests wait for `landed`.
        case finishing
        /// Finished (landed, or kept in the pool) or cancelled.
        case ended
    }

    let capture: Capture
    /// Where the capture's recording goes, relative to the destination directory.
    let destination: String
    /// Its name in the mount now, relative to the destination directory (a rename changes it).
    var name: String
    /// Whether its last rename was onto a file that existed then: the landing replaces it.
    var replacing = false
    /// Who created it: the file's owner in the mount, and the mode it asked for (less its umask).
    let uid: uid_t, gid: gid_t, mode: mode_t
    let created = Date()
    /// Serializes the capture's requests (a `Capture` has a single owner); held across I/O.
    let lock = NSLock()
    /// Guards `state`, `length` and `landed`; never held across I/O, so `stat` never waits.
    private let condition = MonotonicCondition()
    private var state = State.open
    private var snapshot: Int64 = 0

    init(capture: Capture, destination: String, uid: uid_t, gid: gid_t, mode: mode_t) {
        self.capture = capture
        self.destination = destination
        self.name = destination
        self.uid = uid
        self.gid = gid
        self.mode = mode
    }

    private func guarded<T>(_ body: () -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return body()
    }

    var current: State { guarded { state } }

    /// The bytes written so far, as `stat` reports them.
    var length: Int64 { guarded { snapshot } }

    /// Moves from `from` to `to`; false when it was not in `from`.
    func move(from: State, to: State) -> Bool {
        guarded {
            guard state == from else { return false }
            state = to
            if to == .ended { condition.broadcast() }
            return true
        }
    }

    /// Waits until it has ended (its finish has landed it), at most `seconds` (a landing by
    /// copy takes seconds per gigabyte).
    func waitUntilEnded(seconds: UInt64 = 3600) {
        let deadline = MonotonicTime.now() + seconds * 1_000_000_000
        guarded { while state != .ended && condition.wait(until: deadline) {} }
    }

    private func publishLength() {
        let length = capture.length
        guarded { snapshot = length }
    }

    /// The zeros a write past the end is preceded by, a piece at a time.
    private static let zeros = [UInt8](repeating: 0, count: 1 << 20)

    /// Writes `bytes` at `offset`: patches what lies below the recording's length, appends the
    /// rest (zero-filling a gap first). Returns the bytes taken, fewer than asked when the
    /// pool filled up in the middle (the next write gets `ENOSPC`).
    /// - Throws: what `append` and `patch` throw (`.storageFull` when nothing more fits).
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws -> Int {
        defer { publishLength() }
        var length = capture.length
        // A gap that cannot fit is refused before a zero is written: filling the pool with
        // zeros would starve every other capture and still fail.
        if offset > length, offset - length + Int64(bytes.count) > capture.remainingCapacity {
            throw ProVideoError(.storageFull, "a write at \(offset) past the end (\(length)) does not fit in the pool")
        }
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

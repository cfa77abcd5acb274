import ProVideoSystem
import ProVideoWritePath

/// In-place appends in two steps, for the C API (`provideo_capture_append_begin` / `_commit`):
/// a producer that learns a frame's size only after writing it (an encoder, a capture card's
/// DMA) is handed the capture's own buffer, writes, and then says how many bytes it wrote.
/// `append(count:filling:)` covers producers that know the size first.
///
/// Between `reserveInPlace` and `commitInPlace` the caller must make no other call on the
/// capture (the C layer enforces it): the returned bytes are past `length`, in the filling
/// buffer, and nothing else may fill or seal that buffer meanwhile.
extension Capture {
    /// Contiguous room for the next bytes of the recording, inside the buffer being filled:
    /// up to `count` bytes, fewer when the buffer or the capture's grant ends sooner (write those,
    /// commit them, and reserve again for the rest). Takes a free buffer when none is filling,
    /// waiting per the overrun policy when every buffer is in flight.
    /// - Throws: `.invalidArgument` for `count` < 1; `.storageFull` when the reserve is used
    ///   up; `.overrun`; the capture's first error; `.captureClosed`.
    package func reserveInPlace(upTo count: Int) throws -> UnsafeMutableRawBufferPointer {
        try enterCall()
        defer { leaveCall() }
        let started = Self.now()
        try checkOpen()
        guard count > 0 else { throw ProVideoError(.invalidArgument, "an in-place append needs at least 1 byte, not \(count)") }
        let overrunDeadline = options.overrunPolicy.deadline(from: started)
        try requireGranted(length + 1, waitingUntil: overrunDeadline)
        let room = try guarded {
            try writer.reserveInPlace(upTo: count, granted: capacity, waitingUntil: overrunDeadline,
                                      stallDeadline: started + Self.stallLimit)
        }
        guard let room else { throw overrunRefusal("no room was reserved") }
        return room
    }

    /// Counts `count` bytes written at the start of the last `reserveInPlace` room as
    /// appended; `endsFrame` marks the end of a frame there (durability commits end on frame
    /// boundaries, and `statistics.frames` counts it).
    /// - Throws: `.invalidArgument` when `count` exceeds the room; the capture's first error;
    ///   `.captureClosed`.
    package func commitInPlace(_ count: Int, endsFrame: Bool) throws {
        try enterCall()
        defer { leaveCall() }
        try checkOpen()
        let room = try guarded { try writer.roomInPlace() }
        guard count >= 0, count <= room else {
            throw ProVideoError(.invalidArgument, "cannot commit \(count) bytes in place: \(room) were reserved")
        }
        try guarded { try writer.commitInPlace(count, endsFrame: endsFrame) }
    }
}

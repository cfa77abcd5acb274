/// Sorts frames into on time, late and dropped, as a capture card sees its recorder.
///
/// Frame `i` arrives at its due time. The recorder hands it over (starts the append) when it
/// is free; the frame is *on time* when the hand-over ends within one frame interval of its
/// due time, *late* when it ends after that. It is *dropped* when the writer refused it (the
/// pool's `.overrun` under the `.fail` policy), or when the recorder reached it only after the
/// card's input queue of `inputQueueFrames` frames had already overwritten it: a recorder
/// blocked in `write()` loses frames this way.
package struct FrameAccounting: Sendable, Equatable {
    /// Nanoseconds between frames (1e9 / fps).
    package let interval: UInt64
    /// Frames the capture card holds while the recorder is busy.
    package let inputQueueFrames: Int
    package private(set) var onTime = 0
    package private(set) var late = 0
    /// Dropped because the writer refused them (an overrun: every buffer in flight).
    package private(set) var refused = 0
    /// Dropped because the recorder was still busy when the input queue overwrote them.
    package private(set) var overwritten = 0
    package var dropped: Int { refused + overwritten }

    package init(interval: UInt64, inputQueueFrames: Int) {
        self.interval = interval
        self.inputQueueFrames = inputQueueFrames
    }

    /// Whether a frame due at `due` (ns) is still in the card's queue when the recorder turns
    /// to it at `now` (ns). When it is not, it is counted dropped.
    package mutating func isStillQueued(due: UInt64, now: UInt64) -> Bool {
        if now > due && now - due > UInt64(inputQueueFrames) * interval {
            overwritten += 1
            return false
        }
        return true
    }

    /// Counts a frame due at `due` whose hand-over ended at `end` (ns); `accepted` is false
    /// when the writer refused it.
    package mutating func handedOver(due: UInt64, end: UInt64, accepted: Bool) {
        if !accepted {
            refused += 1
        } else if end <= due + interval {
            onTime += 1
        } else {
            late += 1
        }
    }

    /// Adds another stream's or repeat's counts.
    package mutating func add(_ other: FrameAccounting) {
        onTime += other.onTime
        late += other.late
        refused += other.refused
        overwritten += other.overwritten
    }
}

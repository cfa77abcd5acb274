import ProVideoSystem

/// The capture's buffers (slots), all allocated at start: which bytes of the recording each
/// holds and the phase it is in. Pure state: the capture issues the writes it returns.
///
/// Phases and transitions (Docs/WRITE-PATH.md has the full table):
///
///     free ──startFilling──▶ filling ──seal──▶ inFlight ──complete──▶ free
///                              │  ▲                ▲  │ short: the rest is resubmitted
///                  beginFlush  ▼  │ flushLanded    │  ▼
///                            flushing ──seal──▶ queuedBehindFlush
///
/// A buffer that fills while a commit's flush of its first bytes is in flight waits in
/// `queuedBehindFlush` (two writes to the same blocks in flight land in any order); the
/// recorder moves on to a free buffer and never waits for that flush. A buffer is free again
/// as soon as its write completes; `sealed` keeps the file order of the writes, so that
/// `landed` moves only over a contiguous prefix.
struct BufferRing {
    enum Phase: Equatable {
        case free
        /// Takes frames; no request of it is in flight.
        case filling
        /// Takes frames; a commit's flush of its first bytes is in flight.
        case flushing
        /// Sealed while its flush was in flight: its write starts when the flush lands.
        case queuedBehindFlush
        case inFlight
    }

    /// The bytes of a sealed buffer, in file order until every write before it landed too.
    struct SealedRange {
        var slot: Int
        var offset: Int64
        /// The end of the recording's bytes in it (the padding is not counted).
        var end: Int64
        var lastFrameEnd: Int64
        var isLanded = false
    }

    struct Slot {
        var phase = Phase.free
        /// The file offset of the buffer's first byte.
        var offset: Int64 = 0
        /// Bytes the buffer can take (at most `slotSize`, less at the end of the reserve).
        var capacity = 0
        /// Bytes of frames in it.
        var filled = 0
        /// Its write, once sealed: `filled` padded to the alignment.
        var write = WriteProgress(length: 0)
        var submittedAt: UInt64 = 0
        /// The end offset of the last frame that ends inside the buffer, or -1.
        var lastFrameEnd: Int64 = -1
    }

    /// A write for the engine: `length` bytes at `address` to `offset` of the data file.
    struct Write {
        var tag: CompletionTag
        var slot: Int
        var address: UnsafeRawPointer
        var length: Int
        var offset: Int64
    }

    let memory: UnsafeMutableRawBufferPointer
    let slotSize: Int
    let alignment: Int
    private(set) var slots: [Slot]
    /// Free slots, taken from the end.
    private var freeSlots: [Int]
    /// Sealed buffers' bytes not yet in `landed`, in file-offset order.
    private(set) var sealed: [SealedRange]
    private(set) var filling: Int?
    /// The contiguous prefix of the recording that is on disk, in bytes.
    private(set) var landed: Int64 = 0
    /// The end of the last frame inside `landed`: the longest length a commit can promise.
    private(set) var landedFrameEnd: Int64 = 0

    /// - Throws: `WritePathViolation` when the slots are not whole multiples of `alignment` or
    ///   do not divide `memory`.
    init(memory: UnsafeMutableRawBufferPointer, slotSize: Int, alignment: Int) throws {
        guard alignment > 0, slotSize > 0, slotSize % alignment == 0, memory.count % slotSize == 0 else {
            throw WritePathViolation("buffers of \(slotSize) bytes in \(memory.count), aligned to \(alignment)")
        }
        self.memory = memory
        self.slotSize = slotSize
        self.alignment = alignment
        let count = memory.count / slotSize
        slots = Array(repeating: Slot(), count: count)
        freeSlots = Array((0..<count).reversed())
        sealed = []
        // A buffer is reused once its own write lands, so ranges can outnumber buffers while
        // one slow write holds `landed` back: room for four rounds before the array grows.
        sealed.reserveCapacity(4 * count)
    }

    var hasFreeSlot: Bool { !freeSlots.isEmpty }
    /// Buffers handed to the disk (writing, flushing or queued behind a flush).
    var inFlight: Int { slots.count - freeSlots.count - (filling == nil ? 0 : 1) }
    var isIdle: Bool { sealed.isEmpty }

    private var fillingRoom: Int { filling.map { slots[$0].capacity - slots[$0].filled } ?? 0 }

    /// Bytes frames can take now without waiting for the disk.
    var space: Int { fillingRoom + freeSlots.count * slotSize }

    /// The room once every sealed buffer has landed: a larger frame is taken when there is
    /// this much and copied on as writes complete.
    var mostSpace: Int { fillingRoom + (slots.count - (filling == nil ? 0 : 1)) * slotSize }

    func base(of slot: Int) -> UnsafeMutableRawPointer { memory.baseAddress! + slot * slotSize }

    /// Takes a free buffer for the bytes from file `offset`, at most `limit` of them.
    mutating func startFilling(at offset: Int64, limit: Int64) throws {
        guard filling == nil, !freeSlots.isEmpty, limit > 0 else {
            throw WritePathViolation("a buffer started filling with \(filling.map { "buffer \($0)" } ?? "none") filling, "
                                     + "\(freeSlots.count) free, \(limit) bytes granted ahead")
        }
        let slot = freeSlots.removeLast()
        slots[slot] = Slot(phase: .filling, offset: offset, capacity: Int(min(Int64(slotSize), limit)))
        filling = slot
    }

    /// The filling buffer's next unfilled bytes, at most `count`.
    func nextPiece(upTo count: Int) throws -> UnsafeMutableRawBufferPointer {
        guard let slot = filling else { throw WritePathViolation("bytes were placed with no buffer filling") }
        let n = min(slots[slot].capacity - slots[slot].filled, count)
        return UnsafeMutableRawBufferPointer(start: base(of: slot) + slots[slot].filled, count: n)
    }

    /// Counts `count` bytes as filled; `frameEnd` is the frame's end offset when it ends here.
    /// - Returns: true when the buffer is full.
    mutating func didFill(_ count: Int, frameEnd: Int64?) throws -> Bool {
        guard let slot = filling, count <= slots[slot].capacity - slots[slot].filled else {
            throw WritePathViolation("\(count) bytes filled past the filling buffer's room")
        }
        slots[slot].filled += count
        if let frameEnd { slots[slot].lastFrameEnd = frameEnd }
        return slots[slot].filled == slots[slot].capacity
    }

    /// Seals the filling buffer: pads its frames to the alignment with zeros and returns its
    /// write, or queues it behind its flush. An empty buffer goes back to the free list.
    mutating func sealFilling(now: UInt64) -> Write? {
        guard let slot = filling else { return nil }
        filling = nil
        let filled = slots[slot].filled
        guard filled > 0 else {
            slots[slot].phase = .free
            freeSlots.append(slot)
            return nil
        }
        let padded = (filled + alignment - 1) / alignment * alignment
        (base(of: slot) + filled).initializeMemory(as: UInt8.self, repeating: 0, count: padded - filled)
        slots[slot].write = WriteProgress(length: padded)
        sealed.append(SealedRange(slot: slot, offset: slots[slot].offset, end: slots[slot].offset + Int64(filled),
                                  lastFrameEnd: slots[slot].lastFrameEnd))
        if slots[slot].phase == .flushing {
            slots[slot].phase = .queuedBehindFlush
            return nil
        }
        return submit(slot, now: now)
    }

    private mutating func submit(_ slot: Int, now: UInt64) -> Write {
        slots[slot].phase = .inFlight
        slots[slot].submittedAt = now
        return rest(of: slot)
    }

    /// The part of the buffer's write not yet confirmed.
    func rest(of slot: Int) -> Write {
        let done = slots[slot].write.done
        return Write(tag: .slotWrite(slot: slot), slot: slot, address: base(of: slot) + done,
                     length: slots[slot].write.length - done, offset: slots[slot].offset + Int64(done))
    }

    /// Marks the filling buffer as flushing and returns the write of its frames so far, padded
    /// to the alignment (the padding lies beyond the commit and is rewritten with the buffer).
    mutating func beginFlush() throws -> Write {
        guard let slot = filling, slots[slot].phase == .filling else {
            throw WritePathViolation("a flush began with \(filling.map { "buffer \($0) \(slots[$0].phase)" } ?? "no buffer filling")")
        }
        slots[slot].phase = .flushing
        let padded = (slots[slot].filled + alignment - 1) / alignment * alignment
        return flushWrite(slot, progress: WriteProgress(length: padded))
    }

    /// The part of a flush of `slot` not yet confirmed.
    func flushWrite(_ slot: Int, progress: WriteProgress) -> Write {
        Write(tag: .flush(slot: slot), slot: slot, address: base(of: slot) + progress.done,
              length: progress.length - progress.done, offset: slots[slot].offset + Int64(progress.done))
    }

    /// The flush of `slot` landed: the buffer fills on, or its queued write starts.
    mutating func flushLanded(_ slot: Int, now: UInt64) throws -> Write? {
        switch slots[slot].phase {
        case .flushing:
            slots[slot].phase = .filling
            return nil
        case .queuedBehindFlush:
            return submit(slot, now: now)
        default:
            throw WritePathViolation("a flush landed for buffer \(slot) in phase \(slots[slot].phase)")
        }
    }

    /// Applies a write completion of `slot`.
    /// - Returns: nil when the buffer's write is complete (`landed` may have moved), else the
    ///   rest to resubmit.
    /// - Throws: the write's error (see `WriteProgress.apply`).
    mutating func completeWrite(_ slot: Int, result: Int32, path: String) throws -> Write? {
        guard slots[slot].phase == .inFlight else {
            throw WritePathViolation("a write of buffer \(slot) completed in phase \(slots[slot].phase)")
        }
        guard try slots[slot].write.apply(result, alignment: alignment, call: "write", path: path) else {
            return rest(of: slot)
        }
        slots[slot].phase = .free
        freeSlots.append(slot)
        // The one sealed range of this buffer not landed: a buffer is reused only once free.
        guard let index = sealed.firstIndex(where: { $0.slot == slot && !$0.isLanded }) else {
            throw WritePathViolation("buffer \(slot)'s write completed with no sealed range waiting for it")
        }
        sealed[index].isLanded = true
        while let head = sealed.first, head.isLanded {
            sealed.removeFirst()
            landed = head.end
            if head.lastFrameEnd >= 0 { landedFrameEnd = head.lastFrameEnd }
        }
        return nil
    }

    /// Whether a write covering any of the file bytes `range` is in flight from memory that a
    /// patch would change (a commit's flush of the filling buffer).
    func flushCovers(_ range: Range<Int64>) -> Bool {
        slots.contains { slot in
            (slot.phase == .flushing || slot.phase == .queuedBehindFlush)
                && range.overlaps(slot.offset..<slot.offset + Int64(slot.capacity))
        }
    }

    /// The first broken rule of the ring, for `length` bytes appended, or nil.
    func violation(length: Int64) -> String? {
        if landed > length { return "landed \(landed) is past the recording's length \(length)" }
        if landedFrameEnd > landed { return "the last landed frame ends at \(landedFrameEnd), past landed \(landed)" }
        for (index, slot) in slots.enumerated() where slot.phase != .free {
            if slot.write.done % alignment != 0 && !slot.write.isComplete {
                return "buffer \(index) has \(slot.write.done) bytes done, not a multiple of \(alignment)"
            }
            if slot.offset % Int64(alignment) != 0 { return "buffer \(index) starts at unaligned offset \(slot.offset)" }
        }
        var expected = landed
        for range in sealed {
            guard range.offset == expected else {
                return "sealed buffer \(range.slot) starts at \(range.offset), expected \(expected): not in file-offset order"
            }
            if !range.isLanded && slots[range.slot].phase != .inFlight && slots[range.slot].phase != .queuedBehindFlush {
                return "buffer \(range.slot) is \(slots[range.slot].phase) but its write has not landed"
            }
            expected = range.end
        }
        if let filling, slots[filling].offset != expected {
            return "the filling buffer starts at \(slots[filling].offset), expected \(expected)"
        }
        return nil
    }
}

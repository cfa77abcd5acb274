
/// What a request of the write path is, carried through the engine as its 64-bit user data
/// (io_uring's `user_data`) so that each completion goes back to the state it advances, in the
/// manner of TigerBeetle's `src/io/linux.zig` completions.
package enum CompletionTag: Equatable, CustomStringConvertible {
    /// The write of buffer `slot` (the whole buffer, or its rest after a short completion).
    case slotWrite(slot: Int)
    /// A commit's write of the frames in buffer `slot` while it still fills.
    case flush(slot: Int)
    /// The fdatasync(2) a commit makes before its record.
    case dataSync
    /// The 16-byte commit record.
    case commitRecord
    /// The capture's length for other processes (`captures/<id>/progress`).
    case progress
    /// The cancellation of every request, after a failure.
    case cancel

    private static let kindBits: UInt64 = 3

    package var rawValue: UInt64 {
        switch self {
        case .slotWrite(let slot): UInt64(slot) << Self.kindBits | 0
        case .flush(let slot): UInt64(slot) << Self.kindBits | 1
        case .dataSync: 2
        case .commitRecord: 3
        case .cancel: 4
        case .progress: 5
        }
    }

    package init?(rawValue: UInt64) {
        let slot = Int(rawValue >> Self.kindBits)
        switch rawValue & (1 << Self.kindBits - 1) {
        case 0: self = .slotWrite(slot: slot)
        case 1: self = .flush(slot: slot)
        case 2 where slot == 0: self = .dataSync
        case 3 where slot == 0: self = .commitRecord
        case 4 where slot == 0: self = .cancel
        case 5 where slot == 0: self = .progress
        default: return nil
        }
    }

    /// Whether a buffer's tag names one of the capture's `slots` buffers.
    func isValid(slots: Int) -> Bool {
        switch self {
        case .slotWrite(let slot), .flush(let slot): slot < slots
        case .dataSync, .commitRecord, .progress, .cancel: true
        }
    }

    package var description: String {
        switch self {
        case .slotWrite(let slot): "write of buffer \(slot)"
        case .flush(let slot): "flush of buffer \(slot)"
        case .dataSync: "data sync"
        case .commitRecord: "commit record"
        case .cancel: "cancel"
        case .progress: "progress"
        }
    }
}

import FoundationEssentials
import Glibc
import ProVideoSystem

/// The bytes of the reserve that grants in flight have taken but the reserve still holds,
/// recorded in the pool's lock file for every process to see (issue 44). A grant claims its
/// bytes under the reserve lock (a few reads and one pwrite), then allocates them in the
/// capture's file and cuts them from the reserve without it, so that no capture's grant waits
/// behind another's fallocate (ext4's `inode_dio_wait`), cut (a `discard` mount's discards)
/// or give-back.
///
/// Each `PoolLock` that grants holds one slot: an OFD lock on byte `slotLockBase + i` of
/// `pool.lock`, and 48 bytes at `slotValueBase + 48 i` (six little-endian 64-bit values): the
/// bytes it claimed and has not yet allocated, the bytes it allocated and has not yet cut from
/// the reserve, and while a claim stands, the end it gives the capture's file and that file's
/// inode number: a figure read while the fallocate runs counts the claimed bytes as the
/// capture's, whether its file holds them yet or not. Then, while it cuts counted bytes from
/// the reserve (under the size lock, so at most one slot at a time), the bytes it cuts and the
/// reserve's size before: a claim that reads the reserve between the ftruncate and the
/// clearing of the bytes' count tells from the size whether they are still there
/// (`Totals.held(reserveSize:)`) instead of waiting for the cut. A slot counts only while its byte is
/// locked: the kernel drops the lock
/// when its holder dies, so a dead process's claims are proof-free and ignored, and the bytes
/// it allocated and never cut are what `Pool.repair(control:)` cuts (as after a power cut).
/// Values are written under the reserve lock by the slot's holder only; the file is writable
/// by the pool's group, so every value read is range-checked before it is summed.
final class ReserveClaims {
    /// Claimed bytes, in two states.
    struct Totals: Equatable {
        /// Claimed, perhaps not yet in a capture's file: the reserve still holds them.
        var claimed: Int64 = 0
        /// In a capture's file and still in the reserve, until the reserve's cut.
        var allocated: Int64 = 0
        /// For each capture file with a claim standing (by inode number), the size the claim
        /// gives it.
        var claimEnds: [UInt64: Int64] = [:]
        /// The cuts of counted bytes from the reserve in flight: at most one unless a slot was
        /// written by other hands (cuts are made under the size lock).
        var cuts: [CutInFlight] = []

        var total: Int64 { [claimed, allocated].saturatingSum() }

        mutating func add(_ other: Totals) {
            claimed = [claimed, other.claimed].saturatingSum()
            allocated = [allocated, other.allocated].saturatingSum()
            claimEnds.merge(other.claimEnds) { max($0, $1) }
            cuts += other.cuts
        }

        /// Bytes of the reserve the claims hold, given its size read with these claims under the
        /// reserve lock: `total`, less a cut in flight whose ftruncate has happened (its bytes
        /// are gone from the reserve but still counted until their count is cleared). Exact:
        /// the record changes only under the reserve lock and the size only by that cut while
        /// it stands.
        /// - Returns: nil when the size is neither the cut's before nor its after, or more than
        ///   one cut stands: the figures cannot be placed without the size lock.
        func held(reserveSize: Int64) -> Int64? {
            guard let cut = cuts.first else { return total }
            guard cuts.count == 1 else { return nil }
            if reserveSize == cut.from { return total }
            if reserveSize == cut.from - cut.bytes { return total - cut.bytes }
            return nil
        }
    }

    /// A cut of `bytes` counted bytes (claimed or allocated) from a reserve of `from` bytes.
    struct CutInFlight: Equatable {
        var bytes: Int64
        var from: Int64
    }

    /// One slot's record.
    private struct Slot {
        var claimed: Int64 = 0
        var allocated: Int64 = 0
        var claimEnd: Int64 = 0
        var inode: UInt64 = 0
        /// Bytes of `claimed` or `allocated` being cut from the reserve, and the reserve's size
        /// before the cut; 0 and 0 when no cut stands.
        var cutting: Int64 = 0
        var cutFrom: Int64 = 0

        var totals: Totals {
            Totals(claimed: claimed, allocated: allocated, claimEnds: claimed > 0 ? [inode: claimEnd] : [:],
                   cuts: cutting > 0 ? [CutInFlight(bytes: cutting, from: cutFrom)] : [])
        }
    }

    /// Slots a pool has: at most this many `PoolLock`s (a capture's granter, a `Pool` starting a
    /// capture) can have grants in flight at once.
    static let slotCount = 128
    static let slotLockBase: Int64 = 64
    static let slotValueBase: Int64 = 4096
    private static let slotSize = 48

    private let file: FileDescriptor
    /// This lock file description's slot, taken at its first claim (`slotLock`: a capture's
    /// own figure reads the other slots from the recorder's thread).
    private var slot: Int?
    private let slotLock = ThreadLock()
    /// This slot's values as last written; changed under the reserve lock.
    private var own = Slot()

    /// The end of the slots in `pool.lock`, in bytes.
    static let slotsEnd = slotValueBase + Int64(slotCount * slotSize)

    /// - Parameter writable: the lock file is open for writing: its slots get their blocks
    ///   now, so that a claim's pwrite never needs a block (a grant on a full filesystem) and
    ///   never extends the file (XFS then preallocates past its end, and frees that later
    ///   beside whoever is counting the free space).
    init(file: FileDescriptor, writable: Bool) {
        self.file = file
        guard writable else { return }
        do {
            guard Int64(try file.facts().allocatedBytes) < Self.slotsEnd else { return }
        } catch {
            // Not known to have them: allocated again, which changes nothing where it has them.
        }
        // Without the blocks (a full filesystem), a claim finds out: its pwrite fails and
        // the grant says so; nothing is counted from it.
        _ = SystemCalls.live.fallocate(file.rawValue, false, 0, Self.slotsEnd)
    }

    /// What the other slots in use hold: every slot whose byte another open file description
    /// locks. Needs no lock: a slot is written with one 32-byte pwrite; call it under the
    /// reserve lock for a figure no claim changes meanwhile.
    /// - Throws: pread's or fcntl's error (`.ioError`): the claims are then unknown, not none;
    ///   `.corruptState` for a value outside 0 ... `Reserve.maximumSize`.
    func others(_ calls: SystemCalls) throws -> Totals {
        let values = try readSlots(calls)
        let mine = slotLock.withLock { slot }
        var totals = Totals()
        for index in 0..<Self.slotCount where index != mine {
            let slot = values[index]
            guard slot.claimed != 0 || slot.allocated != 0,
                  try file.isLockedByOthers(Self.slotLockBase + Int64(index), 1) else { continue }
            for value in [slot.claimed, slot.allocated, slot.claimEnd, slot.cutting, slot.cutFrom]
            where !(0...Reserve.maximumSize).contains(value) {
                throw ProVideoError(.corruptState, "claim slot \(index) of \(file.path) holds \(value) bytes, outside any "
                                    + "pool's capacity: the reserve's free bytes are unknown until the process holding "
                                    + "the slot ends", path: file.path)
            }
            // A cut of more than the slot counts, or from a reserve smaller than it cuts, is no
            // cut the slot's holder makes.
            if slot.cutting > [slot.claimed, slot.allocated].saturatingSum() || slot.cutting > slot.cutFrom {
                throw ProVideoError(.corruptState, "claim slot \(index) of \(file.path) cuts \(slot.cutting) bytes from a "
                                    + "reserve of \(slot.cutFrom) while it counts \(slot.claimed + slot.allocated): the "
                                    + "reserve's free bytes are unknown until the process holding the slot ends", path: file.path)
            }
            totals.add(slot.totals)
        }
        return totals
    }

    /// Every slot's claims, this one's included. Call with the reserve lock held.
    func all(_ calls: SystemCalls) throws -> Totals {
        var totals = try others(calls)
        totals.add(own.totals)
        return totals
    }

    /// Records a claim of `amount` bytes for the capture's file `data` (inode `inode`), which it
    /// takes to `end` bytes, taking a slot first if it has none. One claim stands at a time per
    /// slot. Call with the reserve lock held.
    /// - Throws: `.busy` when every slot is taken; pwrite's error (nothing is claimed).
    func claim(_ amount: Int64, inode: UInt64, end: Int64, _ calls: SystemCalls) throws {
        assert(own.claimed == 0, "a claim while another stands")
        var next = own
        (next.claimed, next.claimEnd, next.inode) = (amount, end, inode)
        try record(next, calls)
    }

    /// Ends the standing claim: its bytes are in the capture's file (`allocated`), or the
    /// reserve gave them up or they were never taken. `cutEnded`: the reserve gave them up
    /// through a cut this slot recorded (`beginCut`), which ends with the claim; otherwise a
    /// cut in flight is the slot's cutter's, of bytes allocated before, and stands.
    /// Call with the reserve lock held.
    /// - Throws: pwrite's error (the slot is then as it was).
    func endClaim(allocated: Bool, cutEnded: Bool = false, _ calls: SystemCalls) throws {
        var next = own
        if allocated { next.allocated += next.claimed }
        (next.claimed, next.claimEnd, next.inode) = (0, 0, 0)
        if cutEnded { (next.cutting, next.cutFrom) = (0, 0) }
        try record(next, calls)
    }

    /// Records that `amount` of the bytes this slot counts are being cut from a reserve of
    /// `from` bytes. Call with the reserve lock and the size lock held, before the ftruncate;
    /// `clearCut` or `endClaim` ends it.
    /// - Throws: pwrite's error (nothing is recorded: the cut must not be made).
    func beginCut(_ amount: Int64, from: Int64, _ calls: SystemCalls) throws {
        assert(amount > 0 && amount <= own.claimed + own.allocated && amount <= from, "a cut of \(amount) bytes")
        var next = own
        (next.cutting, next.cutFrom) = (amount, from)
        try record(next, calls)
    }

    /// Clears `amount` allocated bytes, cut from the reserve (their cut in flight with them);
    /// `amount` 0 ends a cut that was not made. Call with the reserve lock held.
    /// - Throws: pwrite's error (the slot is then as it was).
    func clearCut(_ amount: Int64, _ calls: SystemCalls) throws {
        var next = own
        next.allocated -= amount
        (next.cutting, next.cutFrom) = (0, 0)
        assert(next.allocated >= 0, "a cut of \(amount) bytes cleared more than was allocated")
        try record(next, calls)
    }

    private func record(_ next: Slot, _ calls: SystemCalls) throws {
        let index = try slotLock.withLock { slot } ?? takeSlot(calls)
        try write(next, at: index, calls)
        own = next
    }

    private func takeSlot(_ calls: SystemCalls) throws -> Int {
        for index in 0..<Self.slotCount where try file.lock(Self.slotLockBase + Int64(index), 1, wait: false) {
            // A dead holder's values are still there: the slot starts from none.
            do {
                try write(Slot(), at: index, calls)
            } catch {
                file.unlock(Self.slotLockBase + Int64(index), 1)
                throw error
            }
            slotLock.withLock { slot = index }
            return index
        }
        throw ProVideoError(.busy, "all \(Self.slotCount) claim slots of \(file.path) are taken: that many captures are "
                            + "granting at once; start this one when another has finished", path: file.path)
    }

    private func write(_ slot: Slot, at index: Int, _ calls: SystemCalls) throws {
        let values = [slot.claimed, slot.allocated, slot.claimEnd, Int64(bitPattern: slot.inode), slot.cutting, slot.cutFrom]
            .map(\.littleEndian)
        try values.withUnsafeBytes {
            try file.writeAll($0, at: Self.slotValueBase + Int64(index * Self.slotSize), calls)
        }
    }

    /// Every slot's values; a slot past the file's end holds none.
    private func readSlots(_ calls: SystemCalls) throws -> [Slot] {
        var values = [Int64](repeating: 0, count: Self.slotSize / 8 * Self.slotCount)
        var done = 0
        try values.withUnsafeMutableBytes { buffer in
            while done < buffer.count {
                let n = try file.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[done...]),
                                      at: Self.slotValueBase + Int64(done), calls)
                if n == 0 { break }
                done += n
            }
        }
        let decoded = values.map { Int64(littleEndian: $0) }
        let words = Self.slotSize / 8
        return (0..<Self.slotCount).map { index in
            let base = words * index
            return Slot(claimed: decoded[base], allocated: decoded[base + 1], claimEnd: decoded[base + 2],
                        inode: UInt64(bitPattern: decoded[base + 3]), cutting: decoded[base + 4], cutFrom: decoded[base + 5])
        }
    }
}

import FoundationEssentials
import Glibc
import ProVideoSystem

/// The pool's lock file. Byte 0 serializes short state changes between processes; bytes 1…3
/// are the busy reasons, each held with an OFD lock (fcntl(2) `F_OFD_SETLK`) by the process
/// doing that work for as long as it runs (`capturing` shared, by every running capture);
/// byte 16 (the reserve lock) serializes the claims of grants (`ReserveClaims`, bytes 64…191 and
/// 4096…10239) and what reads them, for a few reads and one pwrite at a time; byte 17
/// (the reserve's size lock) serializes changes of the reserve's size (a grant's cut, a
/// return, a replenish), which may take a second on a `discard` mount and which a claim
/// must not wait behind; neither waits behind a long mutation such as a move's copy. Whoever
/// holds both takes 17 first. Byte 18 is held shared by every lander waiting for a fleet slot
/// (`FleetSlots`), for `status` to see. OFD locks belong to an open file description, so
/// they conflict between two opens in one process too, and the kernel drops them when their
/// owner dies: a free busy byte is proof the owner is gone, never a guess from a pid.
///
/// Threads sharing one `PoolLock` share its open file description, which never conflicts with
/// itself: `mutationHold` and `reserveHolds` give the mutation and reserve bytes the same
/// exclusion between threads of this process (a `Pool` shared between tasks) that the OFD lock
/// gives between processes.
/// The reserve bytes' holds are shared by every `PoolLock` of this process open on the same
/// file (`ThreadHold.reserveHolds`), so that its captures' grants queue in the kernel.
///
/// On a read-only filesystem (a read-only bind mount, one the kernel remounted read-only after
/// an error) the file is opened read-only: the pool can be read, not changed. The reserve byte is
/// then taken shared (`F_RDLCK` needs only read access), which still waits for a grant made
/// through a writable path to the same pool; a mutation is refused (`readOnlyError`).
final class PoolLock {
    private let file: FileDescriptor
    private let mutationHold = ThreadHold()
    /// The reserve's holds, shared with every other `PoolLock` of this process on this file.
    private let reserveHolds: ThreadHold.ReserveHolds
    private static let mutationByte: Int64 = 0
    private static let reserveByte: Int64 = 16
    private static let reserveSizeByte: Int64 = 17
    /// Held shared by each lander while it waits for a fleet slot (`Landing.waitForSlot`).
    static let fleetWaitByte: Int64 = 18
    /// The grants in flight through this lock file description, and every other's.
    let claims: ReserveClaims
    /// The lock file's filesystem refused a write open (EROFS).
    let readOnly: Bool

    /// - Throws: the open's error (`.ioError`, `.permissionDenied`); on a read-only filesystem,
    ///   the read-only open's (a lock file missing there cannot be created).
    init(path: String, access: PoolAccess) throws {
        do {
            file = try access.openCreating(path, O_RDWR)
            readOnly = false
        } catch let error as ProVideoError where error.errno == EROFS {
            file = try FileDescriptor.open(path, O_RDONLY)
            readOnly = true
        }
        claims = ReserveClaims(file: file, writable: !readOnly)
        reserveHolds = ThreadHold.reserveHolds(of: try file.facts())
    }

    /// What a change to a pool on a read-only filesystem fails with.
    var readOnlyError: ProVideoError {
        ProVideoError(.ioError, "the pool's filesystem is read-only (\(file.path)): the pool can be read (status, list, "
                      + "metrics, check) but not changed; mount it read-write (`mount -o remount,rw`), after checking it "
                      + "if the kernel remounted it read-only after an error", errno: EROFS, path: file.path)
    }

    private static func byte(_ reason: BusyReasons) -> Int64 {
        Int64(reason.rawValue.trailingZeroBitCount) + 1
    }

    /// How long `withMutation` waits for another process's mutation lock, in nanoseconds:
    /// nothing waits without a deadline. Tests shorten it.
    var mutationWaitLimit: UInt64 = 30_000_000_000

    /// Runs `body` while holding the mutation lock, waiting up to `mutationWaitLimit` if
    /// another process has it (polling every 5 ms: `F_OFD_SETLKW` has no timeout).
    /// - Throws: `.busy` when the wait runs out; whatever `body` throws.
    func withMutation<T>(_ body: () throws -> T) throws -> T {
        if readOnly { throw readOnlyError }
        return try holding(Self.mutationByte, mutationHold, "lock", pollMicroseconds: 5_000, body) {
            "another process has held the pool's lock (\(file.path)) for \($0) s: a create writing zeros, a move copying "
                + "a recording, or a process stopped inside one; try again when it is done"
        }
    }

    /// Runs `body` holding the reserve lock (byte 16): every claim of a grant, and every
    /// figure that counts the claims (`ReserveClaims`), is made under it. Holders keep it for
    /// a few reads and one pwrite of the lock file, never for an fallocate or an ftruncate.
    /// Waits up to `mutationWaitLimit`: for this process's other threads in the kernel (one
    /// hold per lock file, `ThreadHold.reserveHolds`), for other processes polling every
    /// millisecond.
    /// - Throws: `.busy` when the wait runs out; whatever `body` throws.
    func withReserve<T>(_ body: () throws -> T) throws -> T {
        try holding(Self.reserveByte, reserveHolds.reserve, "reserve lock", pollMicroseconds: 1_000, body) {
            "another process has held the pool's reserve lock (\(file.path)) for \($0) s; a process is stopped inside a "
                + "reserve change: try again"
        }
    }

    /// Runs `body` holding the reserve's size lock (byte 17): every change of the reserve's
    /// size (a grant's cut, a return, a replenish, a resize, a repair) is made under it, so
    /// that each reads the size it changes. Take it before the reserve lock, never inside it.
    /// Waits as `withReserve` does.
    /// - Throws: `.busy` when the wait runs out; whatever `body` throws.
    func withReserveSize<T>(_ body: () throws -> T) throws -> T {
        try holding(Self.reserveSizeByte, reserveHolds.reserveSize, "reserve's size lock", pollMicroseconds: 1_000, body) {
            "another process has held the pool's reserve size lock (\(file.path)) for \($0) s; a process is stopped "
                + "inside a change of the reserve's size: try again"
        }
    }

    /// Runs `body` holding `byte` and this process's `threadLock` for it, polling for the byte
    /// until `mutationWaitLimit`; `refusal` says why it gave up, given the seconds waited.
    /// Shared on a read-only lock file (`readOnly`): such a process only reads.
    private func holding<T>(_ byte: Int64, _ thread: ThreadHold, _ what: String, pollMicroseconds: UInt32,
                            _ body: () throws -> T, refusal: (UInt64) -> String) throws -> T {
        let deadline = MonotonicTime.now() + mutationWaitLimit
        try hold(thread.lock, what, until: deadline)
        defer { thread.lock.unlock() }
        // Nested in itself on this thread: the byte is held, and the outer call releases it.
        thread.depth += 1
        defer { thread.depth -= 1 }
        if thread.depth > 1 { return try body() }
        while try !(readOnly ? file.lockShared(byte, 1) : file.lock(byte, 1, wait: false)) {
            guard MonotonicTime.now() < deadline else {
                throw ProVideoError(.busy, refusal(mutationWaitLimit / 1_000_000_000), path: file.path)
            }
            MonotonicTime.sleep(microseconds: pollMicroseconds)
        }
        defer { file.unlock(byte, 1) }
        return try body()
    }

    /// Runs `body` holding the mutation lock if no other process holds it; nil without
    /// running it otherwise.
    /// nil too on a read-only lock file: nothing can be changed there.
    func withMutationIfFree<T>(_ body: () throws -> T) throws -> T? {
        guard !readOnly, mutationHold.lock.tryLock() else { return nil }
        defer { mutationHold.lock.unlock() }
        mutationHold.depth += 1
        defer { mutationHold.depth -= 1 }
        if mutationHold.depth > 1 { return try body() }
        guard try file.lock(Self.mutationByte, 1, wait: false) else { return nil }
        defer { file.unlock(Self.mutationByte, 1) }
        return try body()
    }

    /// Takes a hold's lock for this thread, waiting until `deadline` (`MonotonicTime`) in the
    /// kernel: with a grant's claim and its cut on a thread each per capture, a waiter that
    /// polled could miss every release to the threads that took the lock between its polls.
    /// - Throws: `.busy` when another thread of this process kept it that long.
    private func hold(_ lock: ThreadLock, _ what: String, until deadline: UInt64) throws {
        guard lock.lock(until: deadline) else {
            throw ProVideoError(.busy, "another thread of this process has held the pool's \(what) (\(file.path)) "
                                + "for \(mutationWaitLimit / 1_000_000_000) s; try again when it is done", path: file.path)
        }
    }

    /// The reasons whose byte another open file description holds.
    func heldByOthers() throws -> BusyReasons {
        var reasons: BusyReasons = []
        for (reason, _) in BusyReasons.all {
            if try file.isLockedByOthers(Self.byte(reason), 1) { reasons.insert(reason) }
        }
        return reasons
    }

    /// Whether a lander (of another open file description) waits for a fleet slot.
    func othersWaitForFleetSlot() throws -> Bool {
        try file.isLockedByOthers(Self.fleetWaitByte, 1)
    }

    /// Takes `reason`'s byte on this open file description; false if another holds it.
    func tryHold(_ reason: BusyReasons) throws -> Bool {
        try file.lock(Self.byte(reason), 1, wait: false)
    }

    /// Takes `reason`'s byte shared, as every running capture holds `capturing`: others see
    /// the reason until the last holder releases it. False while another holds it exclusively.
    func tryHoldShared(_ reason: BusyReasons) throws -> Bool {
        try file.lockShared(Self.byte(reason), 1)
    }

    func release(_ reason: BusyReasons) {
        file.unlock(Self.byte(reason), 1)
    }
}

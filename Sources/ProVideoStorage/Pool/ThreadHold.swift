import ProVideoSystem
import Synchronization

/// A byte of the pool's lock file as this process's threads hold it: a recursive lock waited
/// for in the kernel, and how deep the thread holding it is in holding the byte (changed only
/// with `lock` held).
final class ThreadHold: @unchecked Sendable {
    let lock = ThreadLock(recursive: true)
    var depth = 0

    /// The reserve lock's and the size lock's holds (bytes 16 and 17), one pair per lock file
    /// (device and inode) in this process, shared by every `PoolLock` open on it. Each capture
    /// has a `PoolLock` of its own (its claim slot belongs to its open file description), and
    /// two descriptions meet only at the OFD byte, which a waiter polls every millisecond; a
    /// capture's granter then lost the reserve lock to the other captures' granters and
    /// cutters for up to 1.6 s while each held it for under a millisecond (10 captures,
    /// 2026-12-06). Sharing the holds queues this process's threads in the kernel; only one at
    /// a time polls the byte, for other processes' holds.
    static func reserveHolds(of lockFile: FileFacts) -> ReserveHolds {
        shared.withLock { table in
            let key = LockFile(device: UInt64(lockFile.deviceMajor) << 32 | UInt64(lockFile.deviceMinor),
                               inode: lockFile.inode)
            if let holds = table[key]?.holds { return holds }
            table = table.filter { $0.value.holds != nil }
            let holds = ReserveHolds()
            table[key] = Weakly(holds)
            return holds
        }
    }

    final class ReserveHolds: @unchecked Sendable {
        let reserve = ThreadHold()
        let reserveSize = ThreadHold()
    }

    private struct LockFile: Hashable {
        let device: UInt64
        let inode: UInt64
    }

    private final class Weakly: @unchecked Sendable {
        weak var holds: ReserveHolds?
        init(_ holds: ReserveHolds) { self.holds = holds }
    }

    private static let shared = Mutex<[LockFile: Weakly]>([:])
}

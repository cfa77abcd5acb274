import Glibc

/// The pool's lock file. Byte 0 serializes short state changes between processes; bytes 1…3
/// are the busy reasons, each held with an OFD lock (fcntl(2) `F_OFD_SETLK`) by the process
/// doing that work for as long as it runs. OFD locks belong to an open file description, so
/// they conflict between two opens in one process too, and the kernel drops them when their
/// owner dies: a free busy byte is proof the owner is gone, never a guess from a pid.
final class PoolLock {
    private let file: FileDescriptor
    private static let mutationByte: Int64 = 0

    init(path: String, access: PoolAccess) throws {
        file = try FileDescriptor.open(path, O_RDWR | O_CREAT, mode: PoolAccess.fileMode)
        try access.apply(to: file)
    }

    private static func byte(_ reason: BusyReasons) -> Int64 {
        Int64(reason.rawValue.trailingZeroBitCount) + 1
    }

    /// Runs `body` while holding the mutation lock, waiting for it if another process has it.
    func withMutation<T>(_ body: () throws -> T) throws -> T {
        _ = try file.lock(Self.mutationByte, 1, wait: true)
        defer { file.unlock(Self.mutationByte, 1) }
        return try body()
    }

    /// The reasons whose byte another open file description holds.
    func heldByOthers() throws -> BusyReasons {
        var reasons: BusyReasons = []
        for (reason, _) in BusyReasons.all {
            if try file.isLockedByOthers(Self.byte(reason), 1) { reasons.insert(reason) }
        }
        return reasons
    }

    /// Takes `reason`'s byte on this open file description; false if another holds it.
    func tryHold(_ reason: BusyReasons) throws -> Bool {
        try file.lock(Self.byte(reason), 1, wait: false)
    }

    func release(_ reason: BusyReasons) {
        file.unlock(Self.byte(reason), 1)
    }
}

import Glibc

/// What a running capture holds so that every process knows it is alive: the pool's
/// `capturing` busy reason, shared with every other running capture, and an exclusive OFD lock
/// on byte 0 of its own `progress` file. The kernel drops both when the process dies, so a
/// capture whose `progress` lock is free has a dead owner and may be salvaged, alone, while
/// the others keep running.
final class CaptureClaim {
    private let poolLock: PoolLock
    private var progress: FileDescriptor?

    init(poolLockPath: String, access: PoolAccess) throws {
        poolLock = try PoolLock(path: poolLockPath, access: access)
    }

    /// Takes `capturing` (shared). False while a resize or another holder has it exclusively.
    func holdCapturing() throws -> Bool { try poolLock.tryHoldShared(.capturing) }

    /// Locks the capture's `progress` file: from here on the capture is alive to others.
    func holdCapture(_ files: CaptureFiles) throws {
        let fd = try FileDescriptor.open(files.progress, O_RDWR)
        guard try fd.lock(0, 1, wait: false) else {
            throw ProVideoError(.invariantViolated, "the new capture \(files.id) is already locked by another process",
                                path: files.progress)
        }
        progress = fd
    }

    /// Releases both locks: the capture is no longer alive.
    func release() {
        progress?.unlock(0, 1)
        progress = nil
        poolLock.release(.capturing)
    }

    /// Whether the capture in `files` has a live owner (any open file description, in this
    /// process or another, holds its `progress` lock). A capture without a `progress` file was
    /// killed while being created. Fails closed: an error other than ENOENT (EMFILE in a busy
    /// recorder, EIO, a planted link) means "alive or unknown", so no salvage ever cuts a
    /// capture whose owner may still be writing it.
    static func isAlive(_ files: CaptureFiles) -> Bool {
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(files.progress, O_RDONLY)
        } catch let error as ProVideoError {
            return error.errno != ENOENT
        } catch { return true }
        return (try? fd.isLockedByOthers(0, 1)) ?? true
    }
}

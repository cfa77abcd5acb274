import Glibc
import ProVideoSystem

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

    /// Whether the capture in `files` has a live owner: any open file description, in this
    /// process or another, holds its `progress` lock. No `progress` file is a dead owner: the
    /// capture was killed before it made one, or its files are being removed, `progress` last,
    /// once everything else is gone (`Pool.removeFiles`). Any other failure (EMFILE in a busy
    /// recorder, EIO, a planted link or FIFO, an entry that is not a directory) is `unknown`,
    /// so no salvage ever cuts a capture whose owner may still be writing it.
    static func liveness(_ files: CaptureFiles, _ calls: SystemCalls) -> CaptureLiveness {
        let fd: FileDescriptor
        do {
            let refused = calls.lockProbeOpen(files.progress)
            if refused != 0 { throw ProVideoError.system("open", errno: refused, path: files.progress) }
            // O_NONBLOCK: a FIFO planted as `progress` must not hang the opener.
            fd = try FileDescriptor.open(files.progress, O_RDONLY | O_NONBLOCK)
        } catch let error as ProVideoError {
            return error.errno == ENOENT ? .dead : .unknown(error)
        } catch {
            return .unknown(ProVideoError(.ioError, "\(files.progress) cannot be opened (\(error))", path: files.progress))
        }
        do {
            // A second name of another capture's `progress` would show that capture's lock.
            if let refusal = EvidenceFile.refusal(try fd.facts(), expected: S_IFREG, path: files.progress) {
                return .unknown(refusal)
            }
            return try fd.isLockedByOthers(0, 1) ? .alive : .dead
        } catch let error as ProVideoError {
            return .unknown(error)
        } catch {
            return .unknown(ProVideoError(.ioError, "\(files.progress)'s lock cannot be read (\(error))", path: files.progress))
        }
    }
}

/// Whether a capture's recorder is alive, as its `progress` lock shows (`CaptureClaim.liveness`).
enum CaptureLiveness: Equatable, Sendable {
    case alive
    case dead
    /// The lock could not be read: alive for every decision that could cut the capture.
    case unknown(ProVideoError)
}

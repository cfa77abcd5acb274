import Glibc
import Synchronization
import ProVideoSystem

/// Whether a pool's grants and give-backs move extents (`GrantMethod.extentExchange`): proven
/// when the pool is created or opened by a small exchange between two files of its own, and
/// turned off for the rest of this `Pool`'s life when the filesystem refuses one at run time
/// (the next open probes again). One value per `Pool`, shared by its captures' granters.
final class ExtentExchange: Sendable {
    private struct State {
        var on: Bool
        /// Why grants fall back to fallocate and cut, or nil while they exchange (and on a
        /// filesystem that is not XFS, where there is nothing to say).
        var note: String?
    }

    private let state: Mutex<State>

    /// XFS's statfs(2) magic (linux/magic.h): only XFS has the exchange, so no other
    /// filesystem is probed.
    static let xfsMagic: Int64 = 0x5846_5342

    /// Probes `directory`, the pool's, on a filesystem of magic `filesystemMagic`, with files of
    /// `unit` bytes (the pool's allocation unit). Never throws: a probe that cannot be made is
    /// a pool that grants by fallocate and cut, and `note` says why.
    init(probing directory: String, filesystemMagic: Int64, unit: Int64, calls: SystemCalls) {
        guard filesystemMagic == Self.xfsMagic else {
            state = Mutex(State(on: false, note: nil))
            return
        }
        let refusal = Self.probe(directory, unit: unit, calls: calls)
        state = Mutex(State(on: refusal == nil, note: refusal.map { "XFS refused the probe's extent exchange: \($0)" }))
    }

    /// A pool that never exchanges (tests of the fallback, and every `Reserve` made without a pool).
    init(off note: String?) {
        state = Mutex(State(on: false, note: note))
    }

    var isOn: Bool { state.withLock { $0.on } }

    var method: GrantMethod { isOn ? .extentExchange : .fallocateAndCut }

    /// Why grants fall back to fallocate and cut on XFS; nil while they exchange, and elsewhere.
    var note: String? { state.withLock { $0.note } }

    /// The filesystem refused an exchange at run time (`errno` from `path`): every later grant
    /// and give-back of this pool falls back to fallocate and cut, and `note` says so once.
    func refused(errno: Int32, path: String) {
        state.withLock { state in
            guard state.on else { return }
            state.on = false
            state.note = "XFS refused an extent exchange with \(path) (\(String(cString: strerror(errno)))): grants "
                + "fall back to fallocate and cut until the pool is opened again"
        }
    }

    /// Exchanges between two unnamed files in `directory` (`O_TMPFILE`: no name in the pool, and
    /// nothing to remove after a kill): first of two holes of `unit` bytes, which allocates
    /// nothing on an XFS that refuses it (so a filesystem's free space is not touched by
    /// opening a pool there); then of an allocated `unit` into a hole, checked with FIEMAP: the
    /// extent must end up in the other file. nil when both worked, else why not.
    private static func probe(_ directory: String, unit: Int64, calls: SystemCalls) -> String? {
        do {
            let source = try FileDescriptor.openUnnamed(in: directory)
            let target = try FileDescriptor.openUnnamed(in: directory)
            try source.truncate(unit, calls)
            try target.truncate(unit, calls)
            let holes = calls.exchangeRange(target.rawValue, source.rawValue, 0, 0, unit)
            if holes < 0 { return "XFS_IOC_EXCHANGE_RANGE: \(String(cString: strerror(-holes)))" }
            let rc = calls.fallocate(source.rawValue, false, 0, unit)
            if rc < 0 { return "fallocate: \(String(cString: strerror(-rc)))" }
            let exchanged = calls.exchangeRange(target.rawValue, source.rawValue, 0, 0, unit)
            if exchanged < 0 { return "XFS_IOC_EXCHANGE_RANGE: \(String(cString: strerror(-exchanged)))" }
            let (moved, left) = (try target.extents(below: unit).mapped, try source.extents(below: unit).mapped)
            guard moved == unit, left == 0 else {
                return "after the exchange the files map \(moved) and \(left) of \(unit) bytes, not \(unit) and 0"
            }
            return nil
        } catch let error as ProVideoError {
            return error.message
        } catch {
            return "\(error)"
        }
    }
}

#if DEBUG
import Foundation
import Glibc
import Synchronization
import CProVideo

/// Durability bugs switched on by `PROVIDEO_FAULT=<name>`, so the power-loss harness
/// (Tools/powerloss) can prove it catches them: each fault removes one step that
/// the lifecycle documents say a power cut needs. Debug builds only, like `CrashPoint`; a
/// release build has neither the faults nor the variable's name. Both go through `SystemCalls`,
/// the one layer every durability step passes.
enum FaultSwitch {
    /// - `skip-dir-fsync-after-rename`: the first directory fsync after a successful
    ///   `renameat2(RENAME_NOREPLACE)` does nothing (a rename whose directory is never flushed).
    /// - `commit-before-datasync`: a commit's fdatasync of the data reports success at once and
    ///   runs only after the commit record has landed (a record that vouches for unsynced data).
    static func apply(to calls: SystemCalls) -> SystemCalls {
        var faulty = calls
        switch ProcessInfo.processInfo.environment["PROVIDEO_FAULT"] {
        case "skip-dir-fsync-after-rename":
            let renamed = Atomic<Bool>(false)
            let unfaulty = calls
            faulty.renameNoReplace = { from, to in
                let rc = unfaulty.renameNoReplace(from, to)
                if rc == 0 { renamed.store(true, ordering: .sequentiallyConsistent) }
                return rc
            }
            faulty.fsync = { fd in
                var facts = pv_file_facts()
                if pv_fstatx(fd, &facts) == 0, facts.mode & UInt32(S_IFMT) == UInt32(S_IFDIR),
                   renamed.exchange(false, ordering: .sequentiallyConsistent) {
                    return 0
                }
                return unfaulty.fsync(fd)
            }
        case "commit-before-datasync":
            faulty.engine = { RecordBeforeSyncEngine(calls.engine($0)) }
        default:
            break
        }
        return faulty
    }
}

/// The `commit-before-datasync` fault: answers a data sync at once, and syncs for real only
/// when the next commit record completes.
private final class RecordBeforeSyncEngine: WriteEngine {
    private let inner: any WriteEngine
    private var fakeSync: EngineCompletion?
    private var deferredSync: Int32?

    init(_ inner: any WriteEngine) { self.inner = inner }

    var name: String { inner.name }

    func queueWrite(fd: Int32, slot: Int, address: UnsafeRawPointer, length: Int, offset: Int64, tag: UInt64) throws {
        try inner.queueWrite(fd: fd, slot: slot, address: address, length: length, offset: offset, tag: tag)
    }

    func queueDataSync(fd: Int32, tag: UInt64) throws {
        fakeSync = EngineCompletion(tag: tag, result: 0)
        deferredSync = fd
    }

    func submit() throws { try inner.submit() }

    func nextCompletion(waitNanoseconds: Int64) throws -> EngineCompletion? {
        if let fake = fakeSync {
            fakeSync = nil
            return fake
        }
        let completion = try inner.nextCompletion(waitNanoseconds: waitNanoseconds)
        if let fd = deferredSync, completion?.tag == CompletionTag.commitRecord.rawValue {
            deferredSync = nil
            _ = Glibc.fdatasync(fd)
        }
        return completion
    }

    func cancelAll(tag: UInt64) throws { try inner.cancelAll(tag: tag) }

    func shutdown(waitNanoseconds: Int64) -> Bool { inner.shutdown(waitNanoseconds: waitNanoseconds) }
}
#endif

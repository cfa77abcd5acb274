#if DEBUG
import FoundationEssentials
import Glibc
import Synchronization
import CProVideo

/// Durability bugs switched on by `PROVIDEO_FAULT=<name>`, so the power-loss harness
/// (Tools/powerloss) can prove it catches them: each fault removes one step that
/// the lifecycle documents say a power cut needs. Debug builds only, like `CrashPoint`; a
/// release build has neither the faults nor the variable's name. This one goes through
/// `SystemCalls`, the one layer every durability step passes; the write path's own
/// (`commit-before-datasync`) wraps its engine (`CommitBeforeDataSyncFault`).
package enum FaultSwitch {
    /// - `skip-dir-fsync-after-rename`: the first directory fsync after a successful
    ///   `renameat2(RENAME_NOREPLACE)` does nothing (a rename whose directory is never flushed).
    package static func apply(to calls: SystemCalls) -> SystemCalls {
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
        default:
            break
        }
        return faulty
    }
}
#endif

import FoundationEssentials
import ProVideoSystem

/// The `commit-before-datasync` durability bug of `PROVIDEO_FAULT` (see `FaultSwitch`): a
/// commit's fdatasync of the data reports success at once and runs only after the commit record
/// has landed (a record that vouches for unsynced data). Debug builds only; a release build
/// uses the engine as made.
enum CommitBeforeDataSyncFault {
    static func applied(to engine: any WriteEngine) -> any WriteEngine {
        #if DEBUG
        if ProcessInfo.processInfo.environment["PROVIDEO_FAULT"] == "commit-before-datasync" {
            return RecordBeforeSyncEngine(engine)
        }
        #endif
        return engine
    }
}

#if DEBUG
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
            _ = SystemCalls.live.fdatasync(fd)
        }
        return completion
    }

    func cancelAll(tag: UInt64) throws { try inner.cancelAll(tag: tag) }

    func shutdown(waitNanoseconds: Int64) -> Bool { inner.shutdown(waitNanoseconds: waitNanoseconds) }
}
#endif

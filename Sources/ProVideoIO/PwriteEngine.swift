import Glibc
import ProVideoSystem
import Synchronization

/// The fallback engine: one writer thread runs queued requests with pwrite(2) and
/// fdatasync(2) (through `SystemCalls`, so faults can be injected) and reports each result as
/// io_uring would, short writes included. Used where io_uring cannot be set up.
package final class PwriteEngine: WriteEngine {
    package let name = "pwrite"
    /// Requests queued on the caller's thread, handed to the writer by `submit()`.
    private var queued: [WriterQueue.Request]
    private let writer: WriterQueue

    /// - Throws: `.ioError` when the writer thread cannot be started (pthread_create(3)).
    package init(queueDepth: Int, calls: SystemCalls) throws {
        queued = []
        queued.reserveCapacity(queueDepth)
        let writer = WriterQueue(queueDepth: queueDepth, calls: calls)
        self.writer = writer
        // The thread holds the queue, not the engine, so dropping the engine stops it.
        try DetachedThread.start(name: "provideo-writer") {
            writer.run()
            writer.finished.store(true, ordering: .releasing)
        }
    }

    deinit { _ = shutdown(waitNanoseconds: 10_000_000_000) }

    package func queueWrite(fd: Int32, slot: Int, address: UnsafeRawPointer, length: Int, offset: Int64, tag: UInt64) throws {
        queued.append(.write(fd: fd, address: address, length: length, offset: offset, tag: tag))
    }

    package func queueDataSync(fd: Int32, tag: UInt64) throws {
        queued.append(.dataSync(fd: fd, tag: tag))
    }

    package func submit() throws {
        guard !queued.isEmpty else { return }
        writer.take(queued)
        queued.removeAll(keepingCapacity: true)
    }

    package func nextCompletion(waitNanoseconds: Int64) throws -> EngineCompletion? {
        writer.nextCompletion(waitNanoseconds: waitNanoseconds)
    }

    package func cancelAll(tag: UInt64) throws {
        writer.cancelAll(plus: queued)
        queued.removeAll(keepingCapacity: true)
    }

    package func shutdown(waitNanoseconds: Int64) -> Bool {
        writer.stop()
        let deadline = MonotonicTime.now() + UInt64(max(waitNanoseconds, 0))
        while !writer.finished.load(ordering: .acquiring) {
            guard MonotonicTime.now() < deadline else { return false }
            MonotonicTime.sleep(microseconds: 100)
        }
        return true
    }
}

/// The requests the writer thread runs and the completions it reports, guarded by one
/// condition; sized at creation so the write path does not allocate.
private final class WriterQueue: @unchecked Sendable {
    package enum Request {
        case write(fd: Int32, address: UnsafeRawPointer, length: Int, offset: Int64, tag: UInt64)
        case dataSync(fd: Int32, tag: UInt64)

        package var tag: UInt64 {
            switch self {
            case .write(_, _, _, _, let tag), .dataSync(_, let tag): tag
            }
        }
    }

    private let calls: SystemCalls
    private let condition = MonotonicCondition()
    private var submitted: [Request]
    private var completed: [EngineCompletion]
    private var stopping = false
    /// Set by the writer thread once `run` has returned.
    let finished = Atomic(false)

    package init(queueDepth: Int, calls: SystemCalls) {
        self.calls = calls
        submitted = []
        submitted.reserveCapacity(queueDepth)
        completed = []
        completed.reserveCapacity(queueDepth)
    }

    package func take(_ requests: [Request]) {
        condition.lock()
        submitted.append(contentsOf: requests)
        condition.broadcast()
        condition.unlock()
    }

    package func nextCompletion(waitNanoseconds: Int64) -> EngineCompletion? {
        condition.lock()
        defer { condition.unlock() }
        if waitNanoseconds > 0 {
            let deadline = MonotonicTime.now() + UInt64(waitNanoseconds)
            while completed.isEmpty && condition.wait(until: deadline) {}
        }
        return completed.isEmpty ? nil : completed.removeFirst()
    }

    /// Completes every request not yet started, and `unsubmitted`, with -ECANCELED.
    package func cancelAll(plus unsubmitted: [Request]) {
        condition.lock()
        defer { condition.unlock() }
        for request in submitted + unsubmitted {
            completed.append(EngineCompletion(tag: request.tag, result: -ECANCELED))
        }
        submitted.removeAll(keepingCapacity: true)
        condition.broadcast()
    }

    package func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
    }

    package func run() {
        condition.lock()
        while true {
            while submitted.isEmpty && !stopping { condition.wait() }
            if stopping { break }
            let request = submitted.removeFirst()
            condition.unlock()
            let completion: EngineCompletion
            switch request {
            case let .write(fd, address, length, offset, tag):
                completion = EngineCompletion(tag: tag, result: Int32(clamping: calls.pwrite(fd, address, length, offset)))
            case let .dataSync(fd, tag):
                completion = EngineCompletion(tag: tag, result: calls.fdatasync(fd))
            }
            condition.lock()
            completed.append(completion)
            condition.broadcast()
        }
        condition.unlock()
    }
}

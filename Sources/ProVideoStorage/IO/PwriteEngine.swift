import Foundation
import Glibc

/// The fallback engine: one writer thread runs queued requests with pwrite(2) and
/// fdatasync(2) (through `SystemCalls`, so faults can be injected) and reports each result as
/// io_uring would, short writes included. Used where io_uring cannot be set up.
final class PwriteEngine: WriteEngine, @unchecked Sendable {
    private enum Request {
        case write(fd: Int32, address: UnsafeRawPointer, length: Int, offset: Int64, tag: UInt64)
        case dataSync(fd: Int32, tag: UInt64)
    }

    package let name = "pwrite"
    private let calls: SystemCalls
    // Guarded by `condition`; sized at creation so the write path does not allocate.
    private let condition = NSCondition()
    private var queued: [Request]
    private var submitted: [Request]
    private var completed: [EngineCompletion]
    private var stopping = false
    private var thread: Thread?

    init(queueDepth: Int, calls: SystemCalls) {
        self.calls = calls
        queued = []
        queued.reserveCapacity(queueDepth)
        submitted = []
        submitted.reserveCapacity(queueDepth)
        completed = []
        completed.reserveCapacity(queueDepth)
        let thread = Thread { [unowned self] in self.run() }
        thread.name = "provideo-writer"
        self.thread = thread
        thread.start()
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
        condition.lock()
        submitted.append(contentsOf: queued)
        condition.broadcast()
        condition.unlock()
        queued.removeAll(keepingCapacity: true)
    }

    package func nextCompletion(waitNanoseconds: Int64) throws -> EngineCompletion? {
        condition.lock()
        defer { condition.unlock() }
        if waitNanoseconds > 0 {
            let deadline = Date(timeIntervalSinceNow: Double(waitNanoseconds) / 1e9)
            while completed.isEmpty && condition.wait(until: deadline) {}
        }
        return completed.isEmpty ? nil : completed.removeFirst()
    }

    package func cancelAll(tag: UInt64) throws {
        condition.lock()
        defer { condition.unlock() }
        for request in queued + submitted {
            switch request {
            case .write(_, _, _, _, let tag), .dataSync(_, let tag):
                completed.append(EngineCompletion(tag: tag, result: -ECANCELED))
            }
        }
        queued.removeAll(keepingCapacity: true)
        submitted.removeAll(keepingCapacity: true)
        condition.broadcast()
    }

    package func shutdown(waitNanoseconds: Int64) -> Bool {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(max(waitNanoseconds, 0))
        while thread?.isFinished == false {
            guard DispatchTime.now().uptimeNanoseconds < deadline else { return false }
            usleep(100)
        }
        return true
    }

    private func run() {
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

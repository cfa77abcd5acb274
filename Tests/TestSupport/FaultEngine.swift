import Foundation
import Glibc
import ProVideoStorage

/// A write engine for tests, installed through `SystemCalls.engine` around the real one
/// (io_uring or pwrite). By rule it holds requests before the kernel sees them (they are in
/// flight but not yet written), holds completions after the kernel returned them (a slow
/// disk), changes results (EIO), writes a commit's flush in two halves far apart in time (a
/// torn write), or throws from its N-th call. It also watches what the capture asks: two
/// writes to overlapping bytes in flight together are counted in `overlaps`.
///
/// Every call into the real engine happens under one lock; a helper thread hands held
/// requests on when they are due, whether or not the capture calls in.
package final class FaultEngine: WriteEngine, @unchecked Sendable {
    /// A request as the rules see it: what it is, and its 1-based rank among requests of the
    /// same kind (the 3rd buffer write, the 2nd data sync).
    package struct Request: Sendable {
        package var tag: CompletionTag
        package var ordinal: Int
    }

    package struct Rules: Sendable {
        /// Nanoseconds a request waits here before the real engine gets it.
        package var holdRequest: @Sendable (Request) -> UInt64 = { _ in 0 }
        /// Nanoseconds a completion waits here after the real engine returned it.
        package var holdCompletion: @Sendable (Request) -> UInt64 = { _ in 0 }
        /// The result the capture sees, from the real one.
        package var result: @Sendable (Request, Int32) -> Int32 = { $1 }
        /// Writes each commit flush's first half at once and hands the rest on this many
        /// nanoseconds later.
        package var splitFlushes: UInt64?
        /// The 1-based call (of any method) that throws instead of running.
        package var throwOnCall: Int?

        package init() {}
    }

    /// Installs a FaultEngine with `rules` in `calls`; `engine.current` is the one made.
    package static func install(_ rules: Rules, in calls: SystemCalls = .live) -> (SystemCalls, Shared<FaultEngine?>) {
        let made = Shared<FaultEngine?>(nil)
        var calls = calls
        calls.engine = { inner in
            let engine = FaultEngine(wrapping: inner, rules: rules)
            made.update { $0 = engine }
            return engine
        }
        return (calls, made)
    }

    private struct Held {
        var due: UInt64
        var send: () throws -> Void
        var tag: UInt64
    }

    private struct InFlight {
        var request: Request
        var fd: Int32
        var range: Range<Int64>?
        var firstHalf: Int32 = 0
    }

    private let inner: any WriteEngine
    private let rules: Rules
    private let lock = NSLock()
    private var heldRequests: [Held] = []
    private var heldCompletions: [(due: UInt64, completion: EngineCompletion)] = []
    private var inFlight: [UInt64: InFlight] = [:]
    private var ordinals: [String: Int] = [:]
    private var stopping = false
    private var pump: Thread?

    /// Calls made so far, of every method.
    package private(set) var calls = 0
    /// What the capture asked and what it was told, in order.
    package enum Event: Sendable {
        case queued(Request, fd: Int32)
        case delivered(Request, fd: Int32, result: Int32)
    }

    /// Every request queued and every completion delivered, in order.
    package private(set) var events: [Event] = []
    /// Completions handed to the capture, in order, with the result it saw.
    package var delivered: [(request: Request, result: Int32)] {
        events.compactMap { event in
            if case .delivered(let request, _, let result) = event { return (request, result) }
            return nil
        }
    }
    /// Writes queued while another write to overlapping bytes was in flight.
    package private(set) var overlaps = 0
    /// Called (under the engine's lock) with each completion handed to the capture.
    package var onDeliver: (@Sendable (Request, Int32) -> Void)?

    package var name: String { inner.name }

    /// Requests the capture handed in whose completion it has not received.
    package var outstanding: Int { lock.withLock { inFlight.count } }

    package init(wrapping inner: any WriteEngine, rules: Rules) {
        self.inner = inner
        self.rules = rules
        let pump = Thread { [unowned self] in
            while self.lock.withLock({ !self.stopping }) {
                self.lock.withLock { try? self.sendDueRequests() }
                usleep(2_000)
            }
        }
        self.pump = pump
        pump.start()
    }

    deinit { stopPump() }

    private func stopPump() {
        lock.withLock { stopping = true }
        while pump?.isFinished == false { usleep(100) }
    }

    private static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    private func countCall(_ method: String) throws {
        calls += 1
        if calls == rules.throwOnCall {
            throw ProVideoError(.ioError, "injected failure of call \(calls) (\(method))")
        }
    }

    private func register(_ tag: UInt64, fd: Int32, range: Range<Int64>?) -> Request {
        let kind = CompletionTag(rawValue: tag)!
        let key: String = switch kind {
        case .slotWrite: "write"
        case .flush: "flush"
        default: "\(kind)"
        }
        ordinals[key, default: 0] += 1
        let request = Request(tag: kind, ordinal: ordinals[key]!)
        if let range, inFlight.values.contains(where: { $0.fd == fd && $0.range?.overlaps(range) == true }) {
            overlaps += 1
        }
        inFlight[tag] = InFlight(request: request, fd: fd, range: range)
        events.append(.queued(request, fd: fd))
        return request
    }

    private func hold(_ nanoseconds: UInt64, tag: UInt64, _ send: @escaping () throws -> Void) throws {
        if nanoseconds == 0 { return try send() }
        heldRequests.append(Held(due: Self.now() + nanoseconds, send: send, tag: tag))
    }

    private func sendDueRequests() throws {
        let now = Self.now()
        let due = heldRequests.filter { $0.due <= now }
        guard !due.isEmpty else { return }
        heldRequests.removeAll { $0.due <= now }
        for held in due { try held.send() }
        try inner.submit()
    }

    package func queueWrite(fd: Int32, slot: Int, address: UnsafeRawPointer, length: Int, offset: Int64, tag: UInt64) throws {
        try lock.withLock {
            try countCall("queueWrite")
            let request = register(tag, fd: fd, range: offset..<offset + Int64(length))
            let inner = self.inner
            if case .flush = request.tag, let delay = rules.splitFlushes, length >= 8192 {
                let half = length / 2 / 4096 * 4096
                let written = Glibc.pwrite(fd, address, half, off_t(offset))
                precondition(written == half, "the first half of a split flush failed: \(errno)")
                inFlight[tag]!.firstHalf = Int32(half)
                try hold(delay, tag: tag) {
                    try inner.queueWrite(fd: fd, slot: slot, address: address + half, length: length - half,
                                         offset: offset + Int64(half), tag: tag)
                }
                return
            }
            try hold(rules.holdRequest(request), tag: tag) {
                try inner.queueWrite(fd: fd, slot: slot, address: address, length: length, offset: offset, tag: tag)
            }
        }
    }

    package func queueDataSync(fd: Int32, tag: UInt64) throws {
        try lock.withLock {
            try countCall("queueDataSync")
            let request = register(tag, fd: fd, range: nil)
            let inner = self.inner
            try hold(rules.holdRequest(request), tag: tag) { try inner.queueDataSync(fd: fd, tag: tag) }
        }
    }

    package func submit() throws {
        try lock.withLock {
            try countCall("submit")
            try inner.submit()
        }
    }

    package func nextCompletion(waitNanoseconds: Int64) throws -> EngineCompletion? {
        let deadline = Self.now() + UInt64(max(waitNanoseconds, 0))
        try lock.withLock { try countCall("nextCompletion") }
        while true {
            if let completion = try lock.withLock({ try takeCompletion() }) { return completion }
            if Self.now() >= deadline { return nil }
            usleep(1_000)
        }
    }

    /// A held completion now due, or the next one from the real engine unless it must be held.
    private func takeCompletion() throws -> EngineCompletion? {
        try sendDueRequests()
        let now = Self.now()
        if let index = heldCompletions.firstIndex(where: { $0.due <= now }) {
            return deliver(heldCompletions.remove(at: index).completion)
        }
        while var completion = try inner.nextCompletion(waitNanoseconds: 0) {
            guard let entry = inFlight[completion.tag] else { return completion }  // the cancellation's own
            if completion.result >= 0 { completion.result += entry.firstHalf }
            completion.result = rules.result(entry.request, completion.result)
            let delay = rules.holdCompletion(entry.request)
            guard delay == 0 else {
                heldCompletions.append((now + delay, completion))
                continue
            }
            return deliver(completion)
        }
        return nil
    }

    private func deliver(_ completion: EngineCompletion) -> EngineCompletion {
        if let entry = inFlight.removeValue(forKey: completion.tag) {
            events.append(.delivered(entry.request, fd: entry.fd, result: completion.result))
            onDeliver?(entry.request, completion.result)
        }
        return completion
    }

    package func cancelAll(tag: UInt64) throws {
        try lock.withLock {
            try countCall("cancelAll")
            // Held requests have not reached the kernel: they are cancelled, as io_uring
            // cancels requests that have not started.
            for held in heldRequests {
                heldCompletions.append((0, EngineCompletion(tag: held.tag, result: -ECANCELED)))
            }
            heldRequests.removeAll()
            try inner.cancelAll(tag: tag)
        }
    }

    package func shutdown(waitNanoseconds: Int64) -> Bool {
        stopPump()
        return inner.shutdown(waitNanoseconds: waitNanoseconds)
    }
}

import Foundation
import ProVideoStorage
import Synchronization

/// A recorder that splits its recording into takes of `segmentBytes`, as recorders split long
/// recordings into files: frames go to one capture while the next is started, and at a frame
/// boundary past the segment's end the recorder switches to it and the finished one is
/// cancelled (its capacity returns). A sizing trial thus runs for minutes in a pool that holds
/// seconds of each stream. Capture starts and cancels never run on the recorder's thread but on
/// two threads of the writer's own, started with it: a dispatch queue's `async` once took 810 ms
/// inside an append, likely creating a worker thread whose stack `mmap` waited for the mmap lock
/// behind another take's 330 MB buffer populate. Starts and cancels have a thread each, as a
/// recorder starts its next file apart from finishing the last: a cancel gives its take back
/// in steps, each behind a cut of the filesystem (seconds with online discard), and with one
/// thread 1,948 switches of 213 came late in a 12-stream trial, each late take holding more of
/// the pool (with two, 64–223 per trial of 29–362 takes: the start itself is the rest of the
/// wait, Docs/BENCHMARKS.md "Two limits told apart"). When the next capture is not ready at the
/// boundary the recorder goes on in the current one and the switch is counted late. A take that
/// cannot start, or an append that fails other than by an overrun (a full pool), is kept in
/// `failure` (readable from any thread): the recorder goes on where it can, and frames it cannot
/// place are refused.
package final class SegmentedPoolWriter: FrameWriter {
    private let pool: Pool
    private let destination: String
    private let options: CaptureOptions
    private let segmentBytes: Int64
    /// Bytes before a segment's end at which the next capture is started.
    private let leadBytes: Int64
    private let starter: TakeWorker
    private let canceller: TakeWorker
    private var current: Capture
    private var written: Int64 = 0
    private var segmentEnd: Int64
    private var preparing = false
    /// The first take that could not start or append that failed, nil while none did.
    package var failure: Error? { handoff.failure.withLock { $0 } }
    private let handoff = SegmentedPoolWriterHandoff()
    private var completion: LatencySummary
    package private(set) var segments = 1
    /// Switches that found the next capture not started yet.
    package private(set) var lateSwitches = 0
    /// Starts of the next take refused for want of capacity (`.notEnoughSpace`: the takes given
    /// back not yet in the reserve). The stream goes on in its take, as a recorder does when it
    /// cannot open its next file; only a frame the take then cannot place is lost.
    package private(set) var startsRefused = 0
    /// Frames refused because their take's file was not yet granted that far (the filesystem's
    /// fallocate behind the stream), over the takes ended so far; read once the writer closed.
    package private(set) var grantRefusals: Int64 = 0
    /// The grants of the takes ended so far, together; read once the writer closed.
    package private(set) var grantTimings = GrantTimings()

    /// Starts the first capture.
    /// - Parameters:
    ///   - destination: where the takes would move to (every take is cancelled).
    ///   - segmentBytes: bytes per take.
    ///   - firstSegmentBytes: the first take's bytes, so that streams started together do not
    ///     all switch at once.
    ///   - leadBytes: how long before a take's end the next capture starts, in bytes of stream.
    package init(pool: Pool, destination: String, options: CaptureOptions, segmentBytes: Int64, firstSegmentBytes: Int64,
                 leadBytes: Int64) throws {
        precondition(segmentBytes > 0 && firstSegmentBytes > 0 && leadBytes >= 0, "positive segment sizes")
        self.pool = pool
        self.destination = destination
        self.options = options
        self.segmentBytes = segmentBytes
        self.leadBytes = leadBytes
        segmentEnd = firstSegmentBytes
        current = try pool.startCapture(to: destination + ".0", options: options)
        completion = LatencySummary(p50: 0, p99: 0, p999: 0, max: 0)
        starter = TakeWorker(pool: pool, destination: destination, options: options, handoff: handoff, name: "take starts")
        canceller = TakeWorker(pool: pool, destination: destination, options: options, handoff: handoff, name: "take cancels")
    }

    package var engine: String { current.statistics.engine }

    package func append(_ frame: UnsafeRawBufferPointer) throws -> Bool {
        if written >= segmentEnd - leadBytes && !preparing { prepareNext() }
        if written >= segmentEnd { switchCapture() }
        do {
            try current.append(frame)
            written += Int64(frame.count)
            return true
        } catch let error as ProVideoError where error.code == .overrun {
            return false
        } catch {
            fail(error)
            return false
        }
    }

    private func fail(_ error: Error) { handoff.failure.withLock { $0 = $0 ?? error } }

    /// Has the starter start the next capture.
    private func prepareNext() {
        preparing = true
        starter.submit { $0.start = self.segments }
    }

    /// Switches to the next capture if it is ready; the finished one is cancelled by the canceller.
    /// A next capture that could not start is a failure unless the pool lacked the capacity
    /// (`startsRefused`); either way the stream goes on in the current one and tries again an
    /// eighth of a take later.
    private func switchCapture() {
        guard let ready = handoff.next.withLock({ value -> Result<Capture, Error>? in
            defer { value = nil }
            return value
        }) else {
            lateSwitches += 1
            segmentEnd += max(segmentBytes / 8, 1)
            return
        }
        guard case .success(let next) = ready else {
            if case .failure(let error) = ready {
                if (error as? ProVideoError)?.code == .notEnoughSpace { startsRefused += 1 } else { fail(error) }
            }
            preparing = false
            segmentEnd += max(segmentBytes / 8, 1)
            return
        }
        let finished = current
        current = next
        completion = Percentiles.worst(completion, finished.statistics.completionLatency.summary)
        grantRefusals += finished.statistics.grantOverruns
        grantTimings.merge(finished.grantTimings)
        segments += 1
        preparing = false
        segmentEnd = written + segmentBytes
        canceller.submit { $0.cancels.append(finished) }
    }

    package func close() throws {
        completion = Percentiles.worst(completion, current.statistics.completionLatency.summary)
        grantRefusals += current.statistics.grantOverruns
        grantTimings.merge(current.grantTimings)
        var failure: Error?
        do { try current.cancel() } catch { failure = error }
        // Whatever the workers still start or cancel ends before close returns.
        let finished = [starter, canceller].map { $0.finish() }
        if finished.contains(false) {
            failure = failure ?? BenchError("a take's start or cancel took over \(TakeWorker.finishLimit) s")
        }
        if let pending = handoff.next.withLock({ value -> Result<Capture, Error>? in
            defer { value = nil }
            return value
        }), let capture = try? pending.get() {
            do { try capture.cancel() } catch { failure = failure ?? error }
        }
        if let error = failure ?? handoff.cancelError.withLock({ $0 }) { throw error }
    }

    package var completionLatency: LatencySummary { completion }
}

/// What the take worker hands back: the next capture (or why it could not start) and the first
/// error of a cancel; and the writer's first failure.
private final class SegmentedPoolWriterHandoff: Sendable {
    let next = Mutex<Result<Capture, Error>?>(nil)
    let cancelError = Mutex<Error?>(nil)
    let failure = Mutex<Error?>(nil)
}

/// A thread that starts or cancels a `SegmentedPoolWriter`'s takes. The recorder's thread
/// only stores a request and signals: the cancels' array keeps room for sixteen, so no request
/// allocates.
private final class TakeWorker: @unchecked Sendable {
    struct Requests {
        /// The take to start (its number), nil when none is asked for.
        var start: Int?
        var cancels: [Capture] = []
        var finishing = false
    }

    /// Seconds `finish` waits for the last starts and cancels.
    static let finishLimit = 120

    private let condition = MonotonicCondition()
    private var requests = Requests()
    private var finished = false

    init(pool: Pool, destination: String, options: CaptureOptions, handoff: SegmentedPoolWriterHandoff, name: String) {
        requests.cancels.reserveCapacity(16)
        let thread = Thread { [self] in run(pool: pool, destination: destination, options: options, handoff: handoff) }
        thread.name = name
        thread.start()
    }

    /// Changes the requests under the lock and wakes the thread.
    func submit(_ change: (inout Requests) -> Void) {
        condition.lock()
        change(&requests)
        condition.signal()
        condition.unlock()
    }

    /// Asks the thread to end once its requests are done, and waits up to `finishLimit`.
    /// - Returns: false when they were not done in time.
    func finish() -> Bool {
        submit { $0.finishing = true }
        let deadline = MonotonicTime.now() + UInt64(Self.finishLimit) * 1_000_000_000
        condition.lock()
        defer { condition.unlock() }
        while !finished { guard condition.wait(until: deadline) else { return finished } }
        return true
    }

    private func run(pool: Pool, destination: String, options: CaptureOptions, handoff: SegmentedPoolWriterHandoff) {
        while true {
            condition.lock()
            // Woken by each request; the bound only keeps the wait finite.
            while requests.start == nil && requests.cancels.isEmpty && !requests.finishing {
                condition.wait(until: MonotonicTime.now() + 1_000_000_000)
            }
            let (start, cancels, finishing) = (requests.start, requests.cancels, requests.finishing)
            requests.start = nil
            requests.cancels.removeAll(keepingCapacity: true)
            condition.unlock()
            if let start {
                let result = Result { try pool.startCapture(to: destination + ".\(start)", options: options) }
                handoff.next.withLock { $0 = result }
            }
            for capture in cancels {
                do { try capture.cancel() } catch { handoff.cancelError.withLock { $0 = $0 ?? error } }
            }
            if finishing && start == nil && cancels.isEmpty {
                condition.lock()
                finished = true
                condition.broadcast()
                condition.unlock()
                return
            }
        }
    }
}

import Glibc
import ProVideoSystem
import ProVideoIO

/// What `Pool.measureBandwidth` found. Rates in bits per second.
package struct BandwidthMeasurement: Codable, Sendable, Equatable {
    /// The first second's rate: what the device's write cache takes, its best case.
    package var burst: Int64
    /// The rate the device sustained: the last window's once it agreed with the window before
    /// it (`settled`); otherwise the last window's, or the whole run's when it was shorter
    /// than a window.
    package var sustained: Int64
    /// Whether two successive windows agreed within the tolerance (`SteadyRate`).
    package var settled: Bool
    /// Bytes written.
    package var bytes: Int64
    /// Seconds the measurement wrote for, its data syncs included.
    package var seconds: Double
    /// Nanoseconds between data syncs (a capture's default durability interval).
    package var commitInterval: UInt64
    /// Why the rate did not settle; nil when it did.
    package var unsettledReason: String?
}

/// The pool's durable write bandwidth: what captures are admitted against (`Pool.bandwidth`).
extension Pool {
    /// Measures the durable write bandwidth of the pool's device by writing its own reserve at a
    /// capture's commit cadence: `O_DIRECT` writes of 4 MiB, four in flight, through the engine
    /// captures use (io_uring, else pwrite), and every `commitInterval` (a capture's default
    /// durability interval, 1 s) the writes in flight drained and an fdatasync, which the time
    /// includes. (A capture keeps writing beside its data sync; draining first makes this figure
    /// a little lower than a capture's, on the safe side for admission.) It writes until the
    /// rate settles (`SteadyRate`: two 10-s windows within 10 %, after 20 s at least), for at
    /// most `limit` nanoseconds (120 s by default) or 16 times the reserve's size (at least
    /// 64 MiB), whichever comes first: a small pool cannot be written past a device's cache
    /// without rewriting its own blocks, and says so.
    ///
    /// The reserve's content is not the recordings', so nothing is lost; it stays allocated
    /// and written. Busy reason `adjustingCapacity` while it runs (no capture may start).
    /// A sequential write is the device's best case: captures are admitted against
    /// `CaptureAdmission.admissibleShare` of the sustained figure. On a device shared with other work, set the
    /// figure with `setBandwidth(_:)` instead.
    /// - Parameter progress: called about once a second with the seconds written, the bytes
    ///   written and the last window's rate in bits per second.
    /// - Throws: `.busy` (captures run, or a resize or replenish); `.notEnoughSpace` when the
    ///   reserve is smaller than one write; `.ioError`.
    package func measureBandwidth(limit: UInt64 = 120_000_000_000,
                                  commitInterval: UInt64 = CaptureOptions().durabilityInterval,
                                  progress: (Double, Int64, Int64) -> Void = { _, _, _ in }) throws -> BandwidthMeasurement {
        try whileBusy(.adjustingCapacity, action: "measure the pool's bandwidth") {
            let writeSize = 4 << 20, inFlight = 4
            let span = try reserve(layout.reserve).size() / Int64(writeSize) * Int64(writeSize)
            guard span > 0 else {
                throw ProVideoError(.notEnoughSpace, "the reserve is smaller than one \(writeSize)-byte write: "
                                    + "measure with a larger pool, or set the bandwidth", path: path)
            }
            guard let memory = AlignedBuffer(length: writeSize * inFlight, alignment: directIOAlignment.memory) else {
                throw ProVideoError(.ioError, "cannot allocate \(writeSize * inFlight) bytes to measure with")
            }
            memory.bytes.initializeMemory(as: UInt8.self, repeating: 0)
            let buffers = (0..<inFlight).map { UnsafeMutableRawBufferPointer(rebasing: memory.bytes[$0 * writeSize..<($0 + 1) * writeSize]) }
            let file = try FileDescriptor.open(layout.reserve, O_WRONLY, direct: true)
            let engine = try WriteEngineFactory.make(.automatic, buffers: buffers, queueDepth: inFlight, calls: calls)
            defer { _ = engine.shutdown(waitNanoseconds: 30_000_000_000) }
            var rate = SteadyRate()
            let byteLimit = max(span * 16, 64 << 20)
            let started = MonotonicTime.now()
            var written: Int64 = 0, offset: Int64 = 0, pending = 0
            var lastSync = started, lastProgress = started
            func issue(_ slot: Int) throws {
                try engine.queueWrite(fd: file.rawValue, slot: slot, address: UnsafeRawPointer(buffers[slot].baseAddress!),
                                      length: writeSize, offset: offset, tag: UInt64(slot))
                offset = (offset + Int64(writeSize)) % span
                pending += 1
            }
            func reap() throws -> Int {
                guard let completion = try engine.nextCompletion(waitNanoseconds: 30_000_000_000) else {
                    throw ProVideoError(.ioError, "a write to measure the bandwidth did not complete within 30 s",
                                        path: file.path)
                }
                pending -= 1
                guard completion.result == Int32(writeSize) else {
                    throw ProVideoError.system("write", errno: completion.result < 0 ? -completion.result : EIO, path: file.path)
                }
                written += Int64(writeSize)
                return Int(completion.tag)
            }
            func sync() throws {
                while pending > 0 { _ = try reap() }
                try file.sync(calls)
                lastSync = MonotonicTime.now()
                rate.record(time: lastSync - started, bytes: written)
            }
            for slot in 0..<inFlight { try issue(slot) }
            try engine.submit()
            while true {
                let slot = try reap()
                let now = MonotonicTime.now()
                if now - lastProgress >= 1_000_000_000 {
                    lastProgress = now
                    progress(Double(now - started) / 1e9, written, Int64((rate.lastWindow ?? 0) * 8))
                }
                // Only synced bytes count: a rate of unsynced writes is the page cache's or the
                // device cache's, not the media's.
                if now - lastSync >= commitInterval || written >= byteLimit {
                    try sync()
                    if rate.steady != nil || now - started >= limit || written >= byteLimit { break }
                    for again in 0..<inFlight { try issue(again) }
                } else {
                    try issue(slot)
                }
                try engine.submit()
            }
            // The loop ends right after a sync: every write is on the media and counted.
            let settled = rate.steady
            var reason: String?
            if settled == nil {
                reason = written >= byteLimit
                    ? "the reserve (\(ByteFormat.human(span))) was rewritten 16 times before the rate settled: a larger "
                        + "pool measures past the device's cache"
                    : "the rate did not settle within \(limit / 1_000_000_000) s (two 10-s windows within 10 %)"
            }
            let seconds = Double(max(rate.elapsed, 1)) / 1e9
            return BandwidthMeasurement(burst: Int64((rate.burst ?? 0) * 8), sustained: Int64((settled ?? rate.lastWindow ?? 0) * 8),
                                        settled: settled != nil, bytes: written, seconds: seconds,
                                        commitInterval: commitInterval, unsettledReason: reason)
        }
    }

    /// Measures the bandwidth (`measureBandwidth`) and admits captures against its sustained
    /// figure (`setBandwidth`): what `create` does unless told not to, `provideo create` without
    /// `--bandwidth`, and `provideo measure-bandwidth`.
    /// - Returns: the measurement; nil when the reserve is smaller than one 4 MiB write (then
    ///   nothing is recorded and captures are not admitted against a bandwidth).
    /// - Throws: as `measureBandwidth` (but `.notEnoughSpace`) and `setBandwidth`.
    package func measureAndRecordBandwidth(progress: (Double, Int64, Int64) -> Void = { _, _, _ in }) throws
        -> BandwidthMeasurement? {
        let measurement: BandwidthMeasurement
        do {
            measurement = try measureBandwidth(progress: progress)
        } catch let error as ProVideoError where error.code == .notEnoughSpace {
            return nil
        }
        try setBandwidth(measurement.sustained)
        return measurement
    }

    /// Sets the bandwidth captures are admitted against, in bits per second; nil removes it
    /// (every capture is admitted). Captures already running are not affected.
    /// - Throws: `.invalidArgument` for a bandwidth ≤ 0; `.busy` while a resize runs.
    package func setBandwidth(_ bitsPerSecond: Int64?) throws {
        if let bitsPerSecond, bitsPerSecond < 1 {
            throw ProVideoError(.invalidArgument, "the bandwidth must be more than 0 bit/s, not \(bitsPerSecond)")
        }
        try lock.withMutation {
            guard !(try lock.heldByOthers().contains(.adjustingCapacity)) else {
                throw busyError(.adjustingCapacity, action: "set the pool's bandwidth")
            }
            configuration = try PoolConfiguration.load(layout.configuration)
            configuration.bandwidth = bitsPerSecond
            try configuration.save(layout.configuration, calls, access: access)
        }
    }
}

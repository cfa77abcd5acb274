import Foundation
import Glibc
import ProVideoStorage

/// The engine's unthrottled sequential write bandwidth into the pool's reserve, twice: raw (no
/// durability commit, as fio writes), optionally next to fio on the same file, and durable (a
/// commit every `durabilityInterval`, as a recording runs). The durable figure is the one to
/// size streams against: on a disk with a volatile write cache each commit's cache flush makes
/// the cache drain (measured here: 2.9 GB/s raw against 1.1–1.3 GB/s durable over 20 GiB).
/// Each side of a repeat (our raw and durable sides, fio's raw and durable sides, fio with
/// `--fdatasync=N`, N writes being one commit interval at our durable rate) starts a capture of
/// its own (so the pool is busy and no recorder can take the reserve meanwhile), writes its
/// freshly granted file and cancels it (its capacity returns): every side writes blocks a grant
/// has just allocated, as a recording does. The order alternates and, with fio, the passes are
/// an even number: each order runs equally often, and the efficiency is the geometric mean of
/// the paired ratios, reported for each order too (sides sharing one file measured the order:
/// the second ran 1.5–2.5× faster over blocks the first had converted from unwritten).
package enum Calibration {
    package struct Settings: Sendable {
        /// Bytes written per pass.
        package var bytes: Int64
        /// Bytes per write: the capture's `writeSize` and fio's block size.
        package var writeSize: Int
        /// Buffers of `writeSize`, which is the engine's queue depth, and fio's `iodepth`.
        package var queueDepth: Int
        package var repeats: Int
        package var withFio: Bool
        /// fio's buffers on hugetlb pages (`FioRun.hugePages`).
        package var fioHugePages: Bool
        /// The durable side's `durabilityInterval` in nanoseconds (an fdatasync and a commit
        /// record each interval); the raw side and fio commit nothing.
        package var durabilityInterval: UInt64

        package init(bytes: Int64, writeSize: Int, queueDepth: Int, repeats: Int, withFio: Bool, fioHugePages: Bool = false,
                    durabilityInterval: UInt64 = CaptureOptions().durabilityInterval) {
            self.fioHugePages = fioHugePages
            self.bytes = bytes
            self.writeSize = writeSize
            self.queueDepth = queueDepth
            self.repeats = repeats
            self.withFio = withFio
            self.durabilityInterval = durabilityInterval
        }
    }

    /// One repeat, bandwidths in bytes per second.
    package struct Pass: Codable, Sendable {
        package var bandwidth: Double
        package var durableBandwidth: Double
        /// Commits the durable side completed.
        package var durableCommits: Int64
        package var fioBandwidth: Double?
        /// Ours / fio's, raw sides.
        package var efficiency: Double?
        /// fio with an fdatasync every `fioFdatasync` writes.
        package var fioDurableBandwidth: Double? = nil
        /// Ours / fio's, durable sides.
        package var durableEfficiency: Double? = nil
        /// fio's `--fdatasync=N` for this pass: one commit interval of writes at our durable rate.
        package var fioFdatasync: Int? = nil
        package var fioFirst: Bool
    }

    /// Paired ratios summarised: their geometric mean (a ratio's mean; 2× and 0.5× average to
    /// 1×), their range, and the mean of each order, which shows what the order costs.
    package struct RatioSummary: Codable, Sendable, Equatable {
        package var geometricMean: Double
        package var low: Double
        package var high: Double
        /// (high − low) / geometric mean.
        package var spread: Double
        package var oursFirst: Double?
        package var fioFirst: Double?

        package init?(_ ratios: [(ratio: Double, fioFirst: Bool)]) {
            let values = ratios.map(\.ratio).filter { $0 > 0 && $0.isFinite }
            guard !values.isEmpty, values.count == ratios.count else { return nil }
            func mean(_ values: [Double]) -> Double? {
                values.isEmpty ? nil : exp(values.map { log($0) }.reduce(0, +) / Double(values.count))
            }
            geometricMean = mean(values)!
            low = values.min()!
            high = values.max()!
            spread = (high - low) / geometricMean
            oursFirst = mean(ratios.filter { !$0.fioFirst }.map(\.ratio))
            fioFirst = mean(ratios.filter(\.fioFirst).map(\.ratio))
        }
    }

    /// What `calibrate --json` prints. Bandwidths in bytes per second, medians of the passes.
    package struct Report: Codable, Sendable {
        /// Without durability commits, as fio writes.
        package var bandwidth: Double
        /// With a commit every `durabilityInterval`: what a recording sustains.
        package var durableBandwidth: Double
        package var fioBandwidth: Double?
        /// Ours divided by fio's: the geometric mean of the passes' paired ratios (raw sides).
        package var efficiency: Double?
        /// The raw sides' ratios: their range and each order's mean.
        package var efficiencyRatios: RatioSummary?
        /// fio with `--fdatasync`, median.
        package var fioDurableBandwidth: Double?
        /// Ours divided by fio's, durable sides: the geometric mean of the paired ratios.
        package var durableEfficiency: Double?
        package var durableEfficiencyRatios: RatioSummary?
        package var bytes: Int64
        package var writeSize: Int
        package var queueDepth: Int
        /// Seconds between the durable side's commits.
        package var durabilityInterval: Double
        /// Set when a durable pass made fewer than `minimumCommits` commits: its figure is then
        /// closer to the raw one than a recording's would be.
        package var durableWarning: String?
        /// Set when the passes of one side differ by more than `maximumSpread` of their median:
        /// the disk was not steady, and the medians are rough.
        package var spreadWarning: String?
        package var engine: String
        /// fio's command line, program name first, as Docs/BENCHMARKS.md documents it.
        package var fioArguments: [String]?
        package var passes: [Pass]
    }

    /// - Parameters:
    ///   - destination: a path the captures would move to (they are always cancelled).
    ///   - log: progress lines, for standard error.
    package static func run(pool: Pool, settings: Settings, destination: String, log: (String) -> Void) throws -> Report {
        let source = try AlignedMemory(length: settings.writeSize, alignment: pool.directIOAlignment.io)
        ModeRunner.fillPattern(source.bytes)
        func options(durabilityInterval: UInt64) -> CaptureOptions {
            CaptureOptions(bitrate: 8 * Int64(settings.writeSize * settings.queueDepth),
                           bufferBudget: settings.writeSize * settings.queueDepth,
                           writeSize: settings.writeSize, durabilityInterval: durabilityInterval,
                           overrunPolicy: .wait(nanoseconds: 30_000_000_000))
        }
        // Longer than any pass: the raw side commits nothing.
        let raw = options(durabilityInterval: 3_600_000_000_000)
        let durable = options(durabilityInterval: settings.durabilityInterval)
        log("warm-up: \(ByteFormat.human(settings.bytes)) through our engine (not measured)")
        var engine = try withCapture(pool, destination, raw) { capture in
            _ = try ourPass(capture, source: source, bytes: settings.bytes)
            return capture.statistics.engine
        }
        var passes: [Pass] = []
        var fioArguments: [String]?
        // The first pass runs ours first, so each later durable fio side can match the cadence
        // our durable side last measured.
        var durableRate: Double?
        let repeats = settings.withFio ? (settings.repeats + 1) / 2 * 2 : settings.repeats
        if repeats != settings.repeats {
            log("\(repeats) passes instead of \(settings.repeats): each order (ours first, fio first) runs equally often")
        }
        // Each side writes a capture's freshly granted file of its own, as a recording does:
        // sides that shared one file measured the order (the second overwrote blocks the first
        // had already converted from unwritten, and ran 1.5–2.5× faster).
        func ourSide(_ options: CaptureOptions) throws -> (bandwidth: Double, commits: Int64) {
            try withCapture(pool, destination, options) { capture in
                engine = capture.statistics.engine
                let bandwidth = try settled(capture.file) { try ourPass(capture, source: source, bytes: settings.bytes) }
                return (bandwidth, capture.statistics.commits)
            }
        }
        func fioSide(_ options: CaptureOptions, fdatasyncEvery: Int?) throws -> Double {
            try withCapture(pool, destination, options) { capture in
                try capture.ensureGranted(settings.bytes)
                let fio = FioRun(file: capture.file, bytes: settings.bytes, blockSize: settings.writeSize,
                                 queueDepth: settings.queueDepth, fixedBuffers: engine == "io_uring",
                                 hugePages: settings.fioHugePages, fdatasyncEvery: fdatasyncEvery)
                if fdatasyncEvery == nil { fioArguments = fio.arguments }
                return try settled(capture.file) { try fio.run() }
            }
        }
        // Writes per commit interval at our durable rate.
        func writesPerCommit(_ rate: Double) -> Int {
            max(Int((rate * Double(settings.durabilityInterval) / 1e9 / Double(settings.writeSize)).rounded()), 1)
        }
        for index in 0..<repeats {
            let fioFirst = index % 2 == 1
            var fioBandwidth: Double?, fioDurable: Double?, fdatasync: Int?
            if settings.withFio && fioFirst { fioBandwidth = try fioSide(raw, fdatasyncEvery: nil) }
            try Interruption.check()
            let ours = try ourSide(raw).bandwidth
            if settings.withFio && !fioFirst { fioBandwidth = try fioSide(raw, fdatasyncEvery: nil) }
            try Interruption.check()
            // The first pass runs ours first, so a durable fio side run first has a cadence.
            if settings.withFio && fioFirst, let durableRate {
                fdatasync = writesPerCommit(durableRate)
                fioDurable = try fioSide(durable, fdatasyncEvery: fdatasync)
            }
            try Interruption.check()
            let (durableBandwidth, durableCommits) = try ourSide(durable)
            if settings.withFio && fioDurable == nil {
                fdatasync = writesPerCommit(durableBandwidth)
                fioDurable = try fioSide(durable, fdatasyncEvery: fdatasync)
            }
            try Interruption.check()
            durableRate = durableBandwidth
            let pass = Pass(bandwidth: ours, durableBandwidth: durableBandwidth, durableCommits: durableCommits,
                            fioBandwidth: fioBandwidth, efficiency: fioBandwidth.map { ours / $0 },
                            fioDurableBandwidth: fioDurable, durableEfficiency: fioDurable.map { durableBandwidth / $0 },
                            fioFdatasync: fdatasync, fioFirst: fioFirst)
            passes.append(pass)
            log("pass \(index + 1)/\(repeats) (\(fioFirst ? "fio" : "ours") first): ours \(megabytes(pass.bandwidth)), "
                + "durable \(megabytes(pass.durableBandwidth))"
                + (pass.fioBandwidth.map { ", fio \(megabytes($0)), efficiency \(String(format: "%.3f", pass.efficiency!))" } ?? "")
                + (pass.fioDurableBandwidth.map {
                    ", fio durable \(megabytes($0)) (--fdatasync=\(fdatasync ?? 0)), durable efficiency "
                        + String(format: "%.3f", pass.durableEfficiency!) } ?? ""))
        }
        let withFio = settings.withFio
        let fewest = passes.map(\.durableCommits).min() ?? 0
        let durableMedian = Percentiles.median(passes.map(\.durableBandwidth))
        // Enough bytes for minimumCommits + 1 commit intervals at the durable rate measured.
        let sizeNeeded = Int64((durableMedian * Double(minimumCommits + 1) * Double(settings.durabilityInterval) / 1e9)
            .rounded(.up))
        let warning = fewest >= minimumCommits ? nil
            : "a durable pass made only \(fewest) commit(s): pass --size \(sizeNeeded) or more (bytes: "
            + "\(minimumCommits + 1) commit intervals at the durable bandwidth) for a figure to size recordings against"
        let rawRatios = withFio ? RatioSummary(passes.compactMap { pass in pass.efficiency.map { ($0, pass.fioFirst) } }) : nil
        let durableRatios = withFio
            ? RatioSummary(passes.compactMap { pass in pass.durableEfficiency.map { ($0, pass.fioFirst) } }) : nil
        return Report(bandwidth: Percentiles.median(passes.map(\.bandwidth)),
                      durableBandwidth: Percentiles.median(passes.map(\.durableBandwidth)),
                      fioBandwidth: withFio ? Percentiles.median(passes.compactMap(\.fioBandwidth)) : nil,
                      efficiency: rawRatios?.geometricMean, efficiencyRatios: rawRatios,
                      fioDurableBandwidth: withFio ? Percentiles.median(passes.compactMap(\.fioDurableBandwidth)) : nil,
                      durableEfficiency: durableRatios?.geometricMean, durableEfficiencyRatios: durableRatios,
                      bytes: settings.bytes, writeSize: settings.writeSize, queueDepth: settings.queueDepth,
                      durabilityInterval: Double(settings.durabilityInterval) / 1e9, durableWarning: warning,
                      spreadWarning: spreadWarning(passes), engine: engine,
                      fioArguments: withFio ? fioArguments.map { ["fio"] + $0 } : nil, passes: passes)
    }

    /// Runs `measure` after flushing what the previous side wrote all the way to the device
    /// (fsync sends a cache flush; a virtual disk's host cache otherwise drains during the next
    /// side's run, and the side measured second paid for the first: measured here, efficiency
    /// 0.17–0.37 when fio ran first against 0.61–1.14 when ours did).
    private static func settled<T>(_ file: String, _ measure: () throws -> T) throws -> T {
        let fd = open(file, O_RDONLY | O_CLOEXEC)
        if fd >= 0 {
            fsync(fd)
            close(fd)
        }
        usleep(500_000)
        return try measure()
    }

    /// The largest spread, (max − min) / median, of one side's passes taken as steady.
    static let maximumSpread = 0.25

    /// A warning when the raw or durable passes (or fio's) spread more than `maximumSpread`.
    static func spreadWarning(_ passes: [Pass]) -> String? {
        let sides: [(String, [Double])] = [("raw", passes.map(\.bandwidth)), ("durable", passes.map(\.durableBandwidth)),
                                           ("fio", passes.compactMap(\.fioBandwidth)),
                                           ("fio durable", passes.compactMap(\.fioDurableBandwidth))]
        let spread = sides.compactMap { name, values -> String? in
            guard values.count > 1, let low = values.min(), let high = values.max() else { return nil }
            let median = Percentiles.median(values)
            guard median > 0, (high - low) / median > maximumSpread else { return nil }
            return "\(name) \(megabytes(low)) … \(megabytes(high)) (\(Int(((high - low) / median * 100).rounded()))% of the median)"
        }
        guard !spread.isEmpty else { return nil }
        return "the passes spread more than \(Int(maximumSpread * 100))%: " + spread.joined(separator: "; ")
            + ". The disk was not steady (other I/O?): rerun with more --repeat and read the medians as rough"
    }

    /// Commits a durable pass needs for its figure to reflect their cost.
    static let minimumCommits: Int64 = 3

    static func megabytes(_ bytesPerSecond: Double) -> String { String(format: "%.1f MB/s", bytesPerSecond / 1e6) }

    private static func withCapture<T>(_ pool: Pool, _ destination: String, _ options: CaptureOptions,
                                       _ body: (Capture) throws -> T) throws -> T {
        let capture = try pool.startCapture(to: destination, options: options)
        do {
            let result = try body(capture)
            try capture.cancel()
            return result
        } catch {
            try? capture.cancel()
            throw error
        }
    }

    /// Appends `bytes` as fast as the engine takes them and waits until all are on disk.
    /// Frames are written in place (`Capture.append(count:filling:)`): each buffer gets the
    /// pattern the first time it is handed out and keeps it, as fio writes its buffers without
    /// refilling them, so both sides do the same work (no copy) and write the same kind of bytes.
    /// - Returns: bytes per second.
    private static func ourPass(_ capture: Capture, source: AlignedMemory, bytes: Int64) throws -> Double {
        let pattern = UnsafeRawBufferPointer(source.bytes)
        var patterned = Set<UnsafeMutableRawPointer>()
        let started = MonotonicClock.nanoseconds()
        var written: Int64 = 0
        while written < bytes {
            try Interruption.check()
            try capture.append(count: pattern.count) { piece in
                if patterned.insert(piece.baseAddress!).inserted {
                    piece.copyMemory(from: UnsafeRawBufferPointer(rebasing: pattern[0..<piece.count]))
                }
            }
            written += Int64(pattern.count)
        }
        // Capture has no package flush: patching the first byte (with its own value) waits for
        // every write in flight, then rewrites one aligned block.
        try capture.patch(UnsafeRawBufferPointer(rebasing: pattern[0..<1]), at: 0)
        return Double(written) / (Double(MonotonicClock.nanoseconds() - started) / 1e9)
    }
}

import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing
@testable import ProVideoStorage

/// A take that finishes while another thread or process opens the pool (a second sink, a
/// landing service, `provideo recover`) is never salvaged: its files go `progress` (its lock)
/// last, so the opener finds it alive or finds nothing of it (issue 37: 6 to 36 of 300 takes
/// were reported "recovered … (0 bytes)" and the reserve ended megabytes too large).
@Suite(.serialized) struct FinishOpenRaceTests {
    static let takes = 500
    static let takeBytes = 64 << 10

    /// Records `takes` takes one after another in `pool`, each to its own file in `out`, while
    /// `opening` runs; returns how many opens overlapped the takes.
    private static func recordTakes(_ pool: Pool, into out: String, beside opening: @escaping @Sendable () throws -> Void) throws -> Int {
        let frame = [UInt8](repeating: 0x5a, count: takeBytes)
        let done = Mutex(false)
        let opens = Mutex(0)
        let failure = Mutex<String?>(nil)
        let opener = Thread {
            while !done.withLock({ $0 }) {
                do {
                    try opening()
                    opens.withLock { $0 += 1 }
                } catch {
                    failure.withLock { $0 = "\(error)" }
                    return
                }
            }
        }
        opener.start()
        defer { done.withLock { $0 = true } }
        for take in 0..<takes {
            let capture = try pool.startCapture(to: out + "/take\(take).mov", options: CaptureOptions(bitrate: 100_000_000))
            try capture.append(frame)
            try capture.finish()
        }
        done.withLock { $0 = true }
        while !opener.isFinished { usleep(1000) }
        if let failure = failure.withLock({ $0 }) { Issue.record("the opener failed: \(failure)") }
        return opens.withLock { $0 }
    }

    private static func expectNoSalvageAndAnExactReserve(_ pool: Pool, _ poolPath: String, initial: Int64) throws {
        let listing = try pool.listing()
        #expect(listing.recovered.isEmpty, "finished takes reported recovered: \(listing.recovered.prefix(3))")
        #expect(try TestSupport.poolStatus(poolPath).captures.isEmpty)
        let unit = pool.reserve(pool.layout.reserve).unit
        // Every take took its rounded length from the reserve, and nothing was given twice.
        let expected = initial - Int64(takes) * TestSupport.roundUp(Int64(takeBytes), unit)
        #expect(try pool.remainingCapacity == expected, "the reserve is not exact to the byte")
        #expect(try pool.check().isEmpty)
    }

    @Test(.timeLimit(.minutes(10))) func anotherThreadOpeningThePoolNeverSalvagesAFinishingTake() throws {
        try TestSupport.withScratch("finish-open-threads") { scratch in
            let out = scratch + "/out"
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
            let poolPath = scratch + "/pool"
            let pool = try Pool.create(at: poolPath, capacity: 64 << 20, measuringBandwidth: false)
            let initial = try pool.remainingCapacity
            let salvagedByOpener = Mutex<[String]>([])
            let opens = try Self.recordTakes(pool, into: out) {
                let opened = try Pool.salvage(at: poolPath)
                salvagedByOpener.withLock {
                    $0 += opened.salvaged.map { "salvaged \($0.path)" } + opened.discarded.map { "discarded \($0.destination)" }
                        + opened.unsalvageable.map { "kept: \($0.message)" }
                }
            }
            // The race was run: the opener opened the pool while the takes finished.
            #expect(opens >= Self.takes / 10, "the opener ran only \(opens) times beside \(Self.takes) takes")
            let salvaged = salvagedByOpener.withLock { $0 }
            #expect(salvaged.isEmpty, "\(salvaged.prefix(3))")
            try Self.expectNoSalvageAndAnExactReserve(pool, poolPath, initial: initial)
        }
    }

    @Test(.timeLimit(.minutes(10))) func anotherProcessRecoveringNeverSalvagesAFinishingTake() throws {
        try TestSupport.withScratch("finish-open-process") { scratch in
            let out = scratch + "/out"
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
            let poolPath = scratch + "/pool"
            let pool = try Pool.create(at: poolPath, capacity: 64 << 20, measuringBandwidth: false)
            let initial = try pool.remainingCapacity
            let reports = Mutex<[String]>([])
            let opens = try Self.recordTakes(pool, into: out) {
                let recover = try TestSupport.run("provideo", ["--pool", poolPath, "recover", "--json"])
                guard recover.status == 0 else { throw ProVideoError(.ioError, "recover: \(recover)") }
                let object = try JSONSerialization.jsonObject(with: Data(recover.stdout.utf8)) as? [String: Any]
                let salvaged = object?["salvaged"] as? [Any] ?? [], discarded = object?["discarded"] as? [Any] ?? []
                if !salvaged.isEmpty || !discarded.isEmpty { reports.withLock { $0.append(recover.stdout) } }
            }
            #expect(opens >= 5, "recover ran only \(opens) times beside \(Self.takes) takes")
            #expect(reports.withLock { $0 }.isEmpty)
            try Self.expectNoSalvageAndAnExactReserve(pool, poolPath, initial: initial)
        }
    }
}

import Foundation
import Glibc
import TestSupport
import Testing
@testable import ProVideoStorage

/// A capture's lead is stream time sized from the grants the pool's captures measured, not a
/// count of steps (issue 44 items 2 and 3): grants slower than two steps of stream refuse no
/// frame, and one capture's slow grant lengthens every capture's lead.
@Suite struct GrantLeadTests {
    /// The rule's figures: four seconds of stream by default, twice the slowest grant once one
    /// is slower than two seconds, 16 s at most; never above an eighth of the room shared among
    /// the running captures nor below two steps; the fill one slowest grant beyond the ask (at
    /// most half that share more).
    @Test func aLeadIsStreamTimeFromTheSlowestGrant() {
        let mebibyte: Int64 = 1 << 20, gibibyte: Int64 = 1 << 30
        // 16 Mbit/s: 2,000,000 bytes a second.
        let quick = GrantLead(step: mebibyte, bitrate: 16_000_000, room: 64 * gibibyte, sharers: 1, slowestGrant: 0)
        #expect(quick.ask == 8_000_000 && quick.fill == 8_000_000, "\(quick)")
        let slow = GrantLead(step: mebibyte, bitrate: 16_000_000, room: 64 * gibibyte, sharers: 1, slowestGrant: 3_000_000_000)
        #expect(slow.ask == 12_000_000 && slow.fill == 18_000_000, "\(slow)")
        let stalled = GrantLead(step: mebibyte, bitrate: 16_000_000, room: 64 * gibibyte, sharers: 1, slowestGrant: 60_000_000_000)
        #expect(stalled.ask == 32_000_000 && stalled.fill == 48_000_000, "\(stalled)")
        let smallPool = GrantLead(step: mebibyte, bitrate: 16_000_000, room: 32 * mebibyte, sharers: 1, slowestGrant: 3_000_000_000)
        #expect(smallPool.ask == 4 * mebibyte && smallPool.fill == 6 * mebibyte, "\(smallPool)")
        let bigSteps = GrantLead(step: 64 * mebibyte, bitrate: 16_000_000, room: 64 * gibibyte, sharers: 1, slowestGrant: 0)
        #expect(bigSteps.ask == 128 * mebibyte && bigSteps.fill == 128 * mebibyte, "\(bigSteps)")
        let noBitrate = GrantLead(step: mebibyte, bitrate: 0, room: 64 * gibibyte, sharers: 1, slowestGrant: 5_000_000_000)
        #expect(noBitrate.ask == 2 * mebibyte && noBitrate.fill == 2 * mebibyte, "\(noBitrate)")
        let shared = GrantLead(step: mebibyte, bitrate: 16_000_000, room: 64 * mebibyte, sharers: 8, slowestGrant: 3_000_000_000)
        #expect(shared.ask == 2 * mebibyte && shared.fill == 2 * mebibyte + 512 << 10, "\(shared)")
        let extreme = GrantLead(step: Int64.max, bitrate: Int64.max, room: Int64.max, sharers: 1, slowestGrant: .max)
        #expect(extreme.ask > 0 && extreme.fill >= extreme.ask)
    }

    /// Leads are cut from the reserve's room, not from the pool: eight captures on an 80 MiB pool
    /// whose grants were measured slow (3 s) each start with at most an eighth of what is left,
    /// shared among the captures then running, and every frame of 34 MB of interleaved takes is
    /// accepted. The pool leaves the frames room for what the design lets the others strand
    /// (`GrantLead`: each start's fill from the room it saw, and one grant in flight each): at
    /// most about 46 MiB here, 15 of them the first capture's fill, beside 32.4 MiB of frames.
    /// On 64 MiB that bound (about 40 MiB) passed the 31.6 MiB the frames left, and in CI the
    /// last capture once ended `storageFull` one frame short, depending on when the granters
    /// asked. The rule itself is pinned by `aLeadIsStreamTimeFromTheSlowestGrant`; with leads of
    /// an eighth of the pool and a slow grant's stream beside it, the first six captures held
    /// the whole reserve unwritten and the seventh could not start.
    @Test func eightCapturesWithSlowGrantsShareASmallPool() throws {
        try TestSupport.withScratch("eight-slow-leads") { scratch in
            let pool = try Pool.create(at: scratch + "/pool", capacity: 80 << 20, measuringBandwidth: false)
            defer { try? pool.destroy() }
            pool.slowestGrant.record(3_000_000_000, at: MonotonicTime.now())
            try MultiChannelTests.recordInterleaved(pool, count: 8, into: scratch)
        }
    }

    /// The slowest grant counts for its window and is then forgotten; a faster one never
    /// replaces a slower one inside it, a slower one does.
    @Test func theSlowestGrantIsForgottenAfterItsWindow() {
        let record = SlowestGrant()
        #expect(record.slowest(now: 1_000) == 0)
        record.record(2_000_000_000, at: 10_000_000_000)
        record.record(500_000_000, at: 11_000_000_000)
        #expect(record.slowest(now: 12_000_000_000) == 2_000_000_000)
        record.record(3_000_000_000, at: 13_000_000_000)
        #expect(record.slowest(now: 13_000_000_000 + SlowestGrant.window - 1) == 3_000_000_000)
        #expect(record.slowest(now: 13_000_000_000 + SlowestGrant.window) == 0)
        record.record(100_000_000, at: 13_000_000_000 + SlowestGrant.window)
        #expect(record.slowest(now: 14_000_000_000 + SlowestGrant.window) == 100_000_000)
    }

    /// Three captures at 16 Mbit/s with 512 KiB steps (two of them were half a second of
    /// stream), each appending in real time, and every grant after their starts held in its
    /// fallocate until its capture's head has gone one second of stream further: no frame is
    /// refused for want of a grant (`.fail`), every capture's first hold ran its second (the
    /// race ran), and each take holds its frames. The hold ends on stream, not time, so a slow
    /// machine makes it no shorter; with leads of two steps, each capture's first hold ended on
    /// a refusal. The lead of four seconds leaves three for the machine's own delays.
    @Test(.timeLimit(.minutes(3)))
    func grantsSlowerThanTwoStepsRefuseNoFrame() throws {
        let count = 3, bitrate: Int64 = 16_000_000, frame = 128 << 10, frames = 96
        let slowBytes = GrantLead.streamBytes(1_000_000_000, bitrate: bitrate)
        // Per capture (by its directory's name): bytes appended, frames refused, appending done;
        // and each hold's end: true when the head went its second.
        let heads = Shared([String: (appended: Int64, refused: Int, done: Bool)]())
        let holds = Shared([String: [Bool]]())
        var calls = SystemCalls.live
        calls.fallocate = { fd, keepSize, offset, length in
            let path = TestSupport.path(of: fd)
            guard offset > 0, path.hasSuffix("/data"), let id = Self.captureID(path) else {
                return SystemCalls.live.fallocate(fd, keepSize, offset, length)
            }
            let start = heads.current[id]?.appended ?? 0
            let deadline = MonotonicTime.now() + GrantScalingTests.holdLimit
            var ran = false
            while MonotonicTime.now() < deadline {
                let head = heads.current[id] ?? (0, 0, false)
                if head.appended >= start + slowBytes { ran = true; break }
                if head.refused > 0 || head.done { break }
                usleep(1_000)
            }
            holds.update { $0[id, default: []].append(ran) }
            return SystemCalls.live.fallocate(fd, keepSize, offset, length)
        }
        // The three captures' share of the room (an eighth, in three) holds four seconds of
        // stream each: what this test measures is the lead in time, not the share.
        try withPool(capacity: 256 << 20, calls: calls) { pool, scratch in
            var options = testOptions
            options.bitrate = bitrate
            options.grantSize = 512 << 10
            options.overrunPolicy = .fail
            // Every frame fits in the buffers: a refusal can only be the grant's.
            options.bufferBudget = frame * frames
            let captures = try (0..<count).map { try pool.startCapture(to: scratch + "/slow-\($0).mov", options: options) }
            let interval = UInt64(frame) * 8 * 1_000_000_000 / UInt64(bitrate)
            let outcomes = Shared([Int: (frames: [UInt8], refusals: [String])]())
            let threads = captures.enumerated().map { index, capture in
                Thread {
                    let id = capture.files.id
                    var accepted: [UInt8] = [], refusals: [String] = []
                    let patterns = (0..<frames).map { TestSupport.pattern(frame, seed: UInt64(index * 1000 + $0)) }
                    let started = MonotonicTime.now()
                    for (number, pattern) in patterns.enumerated() {
                        TestSupport.sleep(untilMonotonic: started + UInt64(number) * interval)
                        do {
                            try capture.append(pattern)
                            accepted += pattern
                            heads.update { $0[id, default: (0, 0, false)].appended += Int64(frame) }
                        } catch {
                            refusals.append("\(error)")
                            heads.update { $0[id, default: (0, 0, false)].refused += 1 }
                        }
                    }
                    heads.update { $0[id, default: (0, 0, false)].done = true }
                    outcomes.update { $0[index] = (accepted, refusals) }
                }
            }
            threads.forEach { $0.start() }
            #expect(GrantScalingTests.awaiting { outcomes.current.count == count }, "the appenders never finished")
            for (index, capture) in captures.enumerated() {
                let (accepted, refusals) = outcomes.current[index] ?? ([], ["never ran"])
                let ran = holds.current[capture.files.id] ?? []
                #expect(refusals.isEmpty, "slow-\(index): \(refusals.count) refused: \(refusals.prefix(2))")
                #expect(capture.statistics.grantOverruns == 0)
                #expect(ran.first == true, "slow-\(index): its holds \(ran) (true: the head went a second)")
                let result = try capture.finish()
                #expect(TestSupport.fileHolds(result.path, accepted), "slow-\(index) does not hold its frames")
            }
            #expect(try pool.check() == [])
        }
    }

    /// A grant one capture found slow lengthens another capture's lead before that capture's own
    /// next grant: with the first capture's grant held 3 s, the second, which has written
    /// nothing, asks early: its lead (`ask`) grows to the stream of twice that, and its file is
    /// granted that far. With its head at 0 and its start's fill granted, nothing but the
    /// shared slowest grant could make it ask.
    @Test(.timeLimit(.minutes(3)))
    func oneCapturesSlowGrantLengthensEveryLead() throws {
        // Large enough that the two captures' share of the room (an eighth, halved) exceeds the
        // longer lead: what binds is the slow grant.
        let holdNanoseconds: UInt64 = 3_000_000_000, bitrate: Int64 = 16_000_000, capacity: Int64 = 256 << 20
        let slowID = Shared<String?>(nil)
        var calls = SystemCalls.live
        calls.fallocate = { fd, keepSize, offset, length in
            if offset > 0, let id = slowID.current, TestSupport.path(of: fd).contains("/captures/\(id)/") {
                TestSupport.sleep(nanoseconds: holdNanoseconds)
            }
            return SystemCalls.live.fallocate(fd, keepSize, offset, length)
        }
        try withPool(capacity: capacity, calls: calls) { pool, scratch in
            var options = testOptions
            options.bitrate = bitrate
            options.grantSize = 1 << 20
            let slow = try pool.startCapture(to: scratch + "/slow.mov", options: options)
            let other = try pool.startCapture(to: scratch + "/other.mov", options: options)
            #expect(other.granter.current.lead == 8_000_000, "four seconds at 16 Mbit/s")
            slowID.update { $0 = slow.files.id }
            // The second frame's head is below the lead: the slow capture's granter grants, slowly.
            let frames = (0..<2).map { TestSupport.pattern(1 << 20, seed: UInt64($0)) }
            for frame in frames { try slow.append(frame) }
            let longer = GrantLead(step: 1 << 20, bitrate: bitrate, room: capacity, sharers: 1, slowestGrant: holdNanoseconds).ask
            #expect(GrantScalingTests.awaiting { other.granter.current.lead >= longer },
                    "the other capture's lead stayed \(other.granter.current.lead), not \(longer)")
            #expect(GrantScalingTests.awaiting { other.granter.grantedBytes >= longer },
                    "the other capture was granted \(other.granter.grantedBytes), not its lead \(longer)")
            #expect(slow.grantTimings.allocate.maximum >= holdNanoseconds)
            #expect(try slow.finish().length == Int64(2 << 20))
            #expect(try other.finish().length == 0)
        }
    }

    /// The capture directory's name in the path of a capture's file (`…/captures/ID/data`).
    static func captureID(_ path: String) -> String? {
        let parts = path.split(separator: "/")
        guard let index = parts.lastIndex(of: "captures"), index + 2 < parts.count else { return nil }
        return String(parts[index + 1])
    }
}

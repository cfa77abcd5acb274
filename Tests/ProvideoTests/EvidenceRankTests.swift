import Foundation
import Glibc
import TestSupport
import Testing
@testable import ProVideoStorage

/// Evidence ranks (issue 63), through the real `provideo`: bytes a readable, single-link
/// commit record proves outrank what a journal says, "placed" is proven only by the place
/// holding the file the journal recorded, and every command keeps reserve + grants ≤
/// capacity. Each case failed on 1ef9be0 (the kinds F1–F5 of the issue).
@Suite struct EvidenceRankTests {
    /// Rewrites the journal of the capture in `capture` through `edit`.
    static func editJournal(_ capture: String, _ edit: (inout [String: Any]) -> Void) throws {
        let path = capture + "/capture.json"
        var object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as! [String: Any]
        edit(&object)
        try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: path))
    }

    /// Whether `path` starts with `bytes`: a Bool for the expectation, since a failing `==` of
    /// two arrays of megabytes has the test library diff them for minutes.
    static func holds(_ path: String, _ bytes: [UInt8]) -> Bool {
        let held = TestSupport.readFile(path)
        return held.count >= bytes.count && held.prefix(bytes.count).elementsEqual(bytes)
    }

    static func expectInvariant(_ pool: String, _ context: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let reading = try CapacityInvariant.read(pool)
        #expect(reading.holds, "\(context): \(reading)", sourceLocation: sourceLocation)
        let status = try CrashKit.provideo(pool, ["status", "--json", "--bytes"])
        let object = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
        let remaining = (object?["remainingCapacity"] as? NSNumber)?.int64Value ?? -1
        #expect(remaining >= 0 && remaining <= reading.capacity,
                "\(context): status shows \(remaining) remaining of \(reading.capacity)", sourceLocation: sourceLocation)
        let check = try CrashKit.provideo(pool, ["check"])
        #expect(!check.stdout.contains("exceed the pool's capacity") && !check.stderr.contains("exceed the pool's capacity"),
                "\(context): check: \(check)", sourceLocation: sourceLocation)
    }

    /// F1: a dead capture that recovery keeps (its journal garbled, its commit record proving
    /// 300,007 bytes) holds its grant through every resize: grow, same and shrink leave the
    /// reserve at the capacity less that grant, and a shrink below it is refused.
    @Test func resizeKeepsTheGrantOfAKeptCapture() throws {
        let input = TestSupport.pattern(300_007, seed: 631)
        try PoolStateInputTests.withKilledCapture(input) { dir, pool, capture in
            try Data("{ not a journal".utf8).write(to: URL(fileURLWithPath: capture + "/capture.json"))
            let recover = try CrashKit.provideo(pool, ["recover"])
            #expect(recover.status == 1 && recover.stderr.contains("committed bytes are kept"), "\(recover)")
            let granted = try TestSupport.statSizes(capture + "/data").size
            #expect(granted >= Int64(input.count))
            for size in ["32M", "32M", "20M"] {
                let resize = try CrashKit.provideo(pool, ["resize", size])
                #expect(resize.status == 0, "resize \(size): \(resize)")
                let reading = try CapacityInvariant.read(pool)
                #expect(reading.reserve == reading.capacity - granted, "resize \(size): \(reading)")
                try Self.expectInvariant(pool, "after resize \(size)")
                // A dead capture writes no more: none of its grant is remaining capacity.
                #expect(try TestSupport.poolStatus(pool).remainingCapacity == reading.reserve)
            }
            // The smallest pool there is (4 MiB) is below the kept grant.
            #expect(granted > 4 << 20)
            let refused = try CrashKit.provideo(pool, ["resize", "4M"])
            #expect(refused.status == 1 && refused.stderr.contains("captures kept in it hold"), "\(granted): \(refused)")
            try Self.expectInvariant(pool, "after the refused shrink")
            #expect(try TestSupport.statSizes(capture + "/data").size == granted)
            #expect(EvidenceRankTests.holds(capture + "/data", input))
        }
    }

    /// F2: a journal whose `placedAt` names a path with no file there, or an unrelated file of
    /// the take's length: the take is not there, so `data` (its only copy) is kept and nothing
    /// is reported recovered; the unrelated file is untouched. Put back, the claim that the
    /// journal recorded with the file's identity is believed once the place holds that file.
    @Test(arguments: ["nothing there", "an unrelated file"])
    func aPlacementTheDestinationDoesNotHoldKeepsTheData(_ kind: String) throws {
        let input = TestSupport.pattern(300_009, seed: 632)
        try PoolStateInputTests.withKilledCapture(input, name: "placed-\(kind.split(separator: " ").last!)") { dir, pool, capture in
            let claimed = dir + "/out/claimed.mov"
            let unrelated = TestSupport.pattern(input.count, seed: 633)
            if kind == "an unrelated file" { try Data(unrelated).write(to: URL(fileURLWithPath: claimed)) }
            try Self.editJournal(capture) { $0["placedAt"] = claimed; $0["phase"] = "completing" }
            let before = TestSupport.readFile(capture + "/data")
            let recover = try CrashKit.provideo(pool, ["recover"])
            #expect(recover.status == 1 && !recover.stdout.contains("recovered") && !recover.stdout.contains("nothing to recover")
                    && recover.stderr.contains("does not hold the take"), "\(recover)")
            #expect(Self.holds(capture + "/data", before), "the take's only copy changed")
            #expect(try TestSupport.poolListing(pool).recovered.isEmpty)
            if kind == "an unrelated file" { #expect(TestSupport.fileEquals(claimed, unrelated)) }
            try Self.expectInvariant(pool, "after recover")
            for command in [["replenish"], ["land", "--retry", "0.1"], ["resize", "24M"]] {
                _ = try CrashKit.provideo(pool, command)
                #expect(Self.holds(capture + "/data", before), "\(command) changed the take's only copy")
                try Self.expectInvariant(pool, "after \(command)")
            }
        }
    }

    /// F3: a journal in `phase: starting` beside a commit record that proves 1 MiB, or that
    /// cannot be read (a symbolic link): kept, never discarded.
    @Test(arguments: ["proves bytes", "unreadable"])
    func aStartingJournalBesideCommittedBytesIsKept(_ kind: String) throws {
        let input = TestSupport.pattern(1 << 20, seed: 634)
        try PoolStateInputTests.withKilledCapture(input, name: "starting-\(kind.split(separator: " ").last!)") { dir, pool, capture in
            try Self.editJournal(capture) { $0["phase"] = "starting" }
            if kind == "unreadable" {
                try FileManager.default.moveItem(atPath: capture + "/commit", toPath: dir + "/commit.saved")
                try FileManager.default.createSymbolicLink(atPath: capture + "/commit", withDestinationPath: dir + "/commit.saved")
            }
            let recover = try CrashKit.provideo(pool, ["recover"])
            #expect(recover.status == 1 && recover.stderr.contains("left as it is")
                    && !recover.stdout.contains("discarded"), "\(recover)")
            #expect(EvidenceRankTests.holds(capture + "/data", input), "the committed bytes went")
            try Self.expectInvariant(pool, "after recover")
        }
    }

    /// F4: `data` replaced by a symbolic link or a directory (the take moved aside): recovery
    /// keeps the capture, and every command that grows the reserve refuses to count the grant
    /// at the link's or directory's own size: `replenish` fails naming the capture and adds
    /// nothing.
    @Test(arguments: ["symlink", "directory"])
    func aDataThatIsNoFileIsNeverCountedAtItsOwnSize(_ kind: String) throws {
        let input = TestSupport.pattern(300_011, seed: 635)
        try PoolStateInputTests.withKilledCapture(input, name: "data-\(kind)") { dir, pool, capture in
            let aside = dir + "/data.aside"
            try FileManager.default.moveItem(atPath: capture + "/data", toPath: aside)
            if kind == "symlink" {
                try FileManager.default.createSymbolicLink(atPath: capture + "/data", withDestinationPath: aside)
            } else {
                try FileManager.default.createDirectory(atPath: capture + "/data", withIntermediateDirectories: false)
            }
            let reserveBefore = try CapacityInvariant.read(pool).reserve
            let recover = try CrashKit.provideo(pool, ["recover"])
            #expect(recover.status == 1 && recover.stderr.contains("cannot be read"), "\(recover)")
            let replenish = try CrashKit.provideo(pool, ["replenish"])
            #expect(replenish.status == 1 && replenish.stderr.contains("cannot be counted")
                    && replenish.stderr.contains(FileSystem.lastComponent(of: capture)), "\(replenish)")
            #expect(try CapacityInvariant.read(pool).reserve == reserveBefore, "the reserve grew into an uncounted grant")
            let check = try CrashKit.provideo(pool, ["check"])
            #expect(check.status == 1 && (check.stdout + check.stderr).contains("cannot be counted"), "\(check)")
            _ = try CrashKit.provideo(pool, ["land", "--retry", "0.1"])
            #expect(try CapacityInvariant.read(pool).reserve == reserveBefore, "land grew the reserve")
            #expect(EvidenceRankTests.holds(aside, input))
        }
    }

    /// The place a killed take was renamed to is looked at without following a link: a link
    /// at the destination to the renamed file is not the take at the destination, so nothing
    /// is reported recovered there (issue 63: following it survived the suite).
    @Test func aLinkAtThePlaceIsNotTheTake() throws {
        let input = TestSupport.pattern(300_019, seed: 641)
        try PoolStateInputTests.withKilledCapture(input) { dir, pool, capture in
            #expect(truncate(capture + "/data", off_t(input.count)) == 0)
            try FileSystem.rename(capture + "/data", dir + "/elsewhere.mov")
            try FileManager.default.createSymbolicLink(atPath: dir + "/out/take.mov", withDestinationPath: dir + "/elsewhere.mov")
            let recover = try CrashKit.provideo(pool, ["recover"])
            #expect(recover.status == 1 && !recover.stdout.contains("recovered"), "\(recover)")
            #expect(try TestSupport.poolListing(pool).recovered.isEmpty)
            #expect(TestSupport.fileEquals(dir + "/elsewhere.mov", input))
        }
    }

    /// A pool file opened for writing must have one link (`FileDescriptor.open`): a reserve
    /// that is also a file outside the pool is never cut or grown through (issue 63: the rule
    /// removed survived the suite).
    @Test func aReserveWithASecondNameIsNeverWrittenThrough() throws {
        try FS.withScratchPool("reserve-second-name", capacity: "16M") { dir, pool in
            #expect(link(pool + "/reserve", dir + "/victim") == 0)
            let before = try TestSupport.statSizes(dir + "/victim").size
            for command in [["resize", "8M"], ["resize", "24M"]] {
                let outcome = try CrashKit.provideo(pool, command)
                #expect(outcome.status == 1 && outcome.stderr.contains("hard links"), "\(command): \(outcome)")
                #expect(try TestSupport.statSizes(dir + "/victim").size == before, "\(command) wrote through the link")
            }
            #expect(unlink(dir + "/victim") == 0)
        }
    }

    /// A give-back that cannot count the grants adds nothing to the reserve: beside a kept
    /// capture whose `data` is a link, a finished take's unused grant and its completion room
    /// stay out of the reserve until the grant can be counted (issue 63: growing it anyway
    /// survived the suite).
    @Test func aGiveBackThatCannotCountGrowsNothing() throws {
        let input = TestSupport.pattern(300_023, seed: 642)
        try PoolStateInputTests.withKilledCapture(input) { dir, pool, capture in
            try FileManager.default.moveItem(atPath: capture + "/data", toPath: dir + "/data.aside")
            try FileManager.default.createSymbolicLink(atPath: capture + "/data", withDestinationPath: dir + "/data.aside")
            let before = try CapacityInvariant.read(pool).reserve
            let take = TestSupport.pattern(100_003, seed: 643)
            let record = try CrashKit.provideo(pool, ["record", dir + "/out/next.mov"], input: take)
            #expect(record.status == 0 && TestSupport.fileEquals(dir + "/out/next.mov", take), "\(record)")
            // The take keeps its rounded length; the rest of its grant (at least the 1 MiB
            // completion room) is not given back.
            let after = try CapacityInvariant.read(pool).reserve
            #expect(after <= before - (1 << 20) - Int64(take.count), "reserve \(before) → \(after)")
        }
    }

    /// F5: a `commit` that is a hard link to another capture's commit file, or that file moved
    /// whole into its place (one link again, a valid record), proves nothing of its own: neither
    /// capture is salvaged at the other's length, both are kept.
    @Test(arguments: ["hard link", "moved"])
    func anotherCapturesCommitRecordIsNotBelieved(_ kind: String) throws {
        let short = TestSupport.pattern(200_003, seed: 636), long = TestSupport.pattern(600_001, seed: 637)
        try PoolStateInputTests.withKilledCapture(short, name: "other-commit-\(kind.split(separator: " ").last!)") { dir, pool, first in
            // The first capture aside while the second is recorded and killed, then back.
            let aside = dir + "/first.aside"
            try FileManager.default.moveItem(atPath: first, toPath: aside)
            try CrashKit.killRecorderAfterCommit(pool, dir + "/out/long.mov", long)
            let second = TestSupport.onlyCapture(pool)
            try FileManager.default.moveItem(atPath: aside, toPath: first)
            try FileManager.default.removeItem(atPath: first + "/commit")
            if kind == "hard link" {
                #expect(link(second + "/commit", first + "/commit") == 0)
            } else {
                try FileManager.default.moveItem(atPath: second + "/commit", toPath: first + "/commit")
            }
            let recover = try CrashKit.provideo(pool, ["recover"])
            #expect(recover.status == 1 && !recover.stdout.contains("recovered")
                    && recover.stderr.contains(kind == "hard link" ? "hard links" : "not the commit record"), "\(recover)")
            #expect(!CrashKit.exists(dir + "/out/take.mov") && !CrashKit.exists(dir + "/out/long.mov"))
            #expect(EvidenceRankTests.holds(first + "/data", short))
            #expect(EvidenceRankTests.holds(second + "/data", long))
            try Self.expectInvariant(pool, "after recover")
        }
    }
}

/// A member's `recover` goes on past a capture it may not act on (issue 63): root's killed
/// capture, its journal claiming a placement, is reported and left as it is, and the member's
/// own killed capture beside it is salvaged whole.
@Suite struct MemberRecoveryTests {
    @Test func aMembersRecoverReportsWhatItMayNotTouchAndGoesOn() throws {
        try AccessTests.withUsers { scratch, binary in
            let pool = scratch + "/pool"
            let created = try AccessTests.provideo(as: AccessTests.admin, binary, ["--pool", pool, "create", "--capacity", "24M",
                                                                                   "--group", AccessTests.group, "--bandwidth", "1G"])
            try #require(created.status == 0, "create: \(created.stderr)")
            defer { _ = try? TestSupport.run(binary, ["--pool", pool, "destroy"]) }
            let roots = TestSupport.pattern(300_013, seed: 639), members = TestSupport.pattern(200_017, seed: 640)
            try CrashKit.killRecorderAfterCommit(pool, scratch + "/out/root.mov", roots)
            let rootCapture = TestSupport.onlyCapture(pool), aside = scratch + "/root-capture.aside"
            try FileManager.default.moveItem(atPath: rootCapture, toPath: aside)
            try CrashKit.killRecorderAfterCommit(pool, scratch + "/out/member.mov", members, as: AccessTests.recorder,
                                                 binary: binary)
            try FileManager.default.moveItem(atPath: aside, toPath: rootCapture)
            try EvidenceRankTests.editJournal(rootCapture) { $0["placedAt"] = scratch + "/out/elsewhere.mov" }
            let recover = try AccessTests.provideo(as: AccessTests.recorder, binary, ["--pool", pool, "recover"])
            #expect(recover.status == 1 && recover.stderr.contains(FileSystem.lastComponent(of: rootCapture)), "\(recover)")
            #expect(TestSupport.fileEquals(scratch + "/out/member.mov", members), "the member's own take was not salvaged")
            #expect(EvidenceRankTests.holds(rootCapture + "/data", roots))
            #expect(!CrashKit.exists(scratch + "/out/root.mov") && !CrashKit.exists(scratch + "/out/elsewhere.mov"))
        }
    }
}

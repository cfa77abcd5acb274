import Foundation
import Glibc
import TestSupport
import Testing

/// A pool seen through a read-only bind mount (as a filesystem the kernel remounted read-only
/// after an error looks): reading it works and says it is read-only; changing it fails saying so.
@Suite(.enabled(if: TestSupport.isRoot, "needs root: a read-only bind mount"))
struct ReadOnlyPoolTests {
    @Test func aReadOnlyPoolCanBeReadNotChanged() throws {
        try FS.withScratchPool(capacity: "16M") { dir, pool in
            let view = dir + "/view"
            try FileManager.default.createDirectory(atPath: view, withIntermediateDirectories: false)
            try TestSupport.shell("mount --bind '\(pool)' '\(view)'")
            // Unmounted however the test ends (lazily if something still has it open), before
            // the scratch pool is destroyed.
            defer { if (try? TestSupport.shell("umount '\(view)'")) == nil { _ = try? TestSupport.shell("umount -l '\(view)'") } }
            try TestSupport.shell("mount -o remount,bind,ro '\(view)'")
            #expect(!FileManager.default.isWritableFile(atPath: view + "/pool.lock"))

            // A capture through the writable path: the read-only view sees it.
            let (recorder, input) = try FS.startRecorder(pool, dir + "/take.mov", ["--bitrate", "80M"])
            defer { try? input.close(); recorder.waitUntilExit() }
            try input.write(contentsOf: Data(TestSupport.pattern(1_000_000, seed: 5)))
            for _ in 0..<100 where (try TestSupport.poolStatus(pool)).captures.isEmpty { usleep(50_000) }

            let status = try FS.provideo(view, "status")
            #expect(status.status == 0, "\(status.stderr)")
            #expect(status.stdout.hasPrefix("pool        \(view) (") && status.stdout.contains(", read-only: it can be read, not changed)\n"),
                    "\(status.stdout)")
            #expect(status.stdout.contains("captures    1 running"), "\(status.stdout)")
            #expect(status.stderr.contains("note: the pool's filesystem is read-only"), "\(status.stderr)")
            let json = try #require(try JSONSerialization.jsonObject(
                with: Data(try FS.provideo(view, "status", "--json").stdout.utf8)) as? [String: Any])
            #expect(json["readOnly"] as? Bool == true && json["initialCapacity"] as? Int64 == 16 << 20)
            #expect(try TestSupport.poolStatus(pool).readOnly == false)
            let row = try FS.provideo(view, "status", "-Hp").stdout.split(separator: "\t").map(String.init)
            #expect(row.count == 11 && row[8] == "yes", "\(row)")

            let list = try FS.provideo(view, "list")
            #expect(list.status == 0 && list.stdout.contains("capture     → \(dir)/take.mov: "), "\(list)")
            let metrics = try FS.provideo(view, "metrics")
            #expect(metrics.status == 0 && metrics.stdout.contains("\nprovideo_read_only{pool=\"\(view)\"} 1\n"), "\(metrics)")
            #expect(try FS.provideo(view, "check").status == 0)

            let readOnly = "provideo: the pool's filesystem is read-only (\(view)/pool.lock): the pool can be read"
            for words in [["replenish"], ["recover"], ["resize", "8M"], ["set-bandwidth", "1G"]] {
                let refused = try TestSupport.run("provideo", ["--pool", view] + words)
                #expect(refused.status == 1 && refused.stderr.hasPrefix(readOnly), "\(words): \(refused.stderr)")
            }
            let record = try FS.provideo(view, "record", dir + "/other.mov", stdin: Data([1, 2, 3]))
            #expect(record.status == 1 && record.stderr.hasPrefix(readOnly), "\(record.stderr)")
            #expect(!FileManager.default.fileExists(atPath: dir + "/other.mov"))
        }
    }
}

import Foundation
import Glibc
import ProVideoStorage
import TestSupport
import Testing

/// `status` and `land` name the I/O scheduler of the pool's disk and what it does with the
/// landing's idle I/O priority; where it does nothing they suggest `land --rate`.
@Suite(.serialized) struct SchedulerStatusTests {
    /// The scheduler of the disk holding `path`, read with coreutils and the shell, not with
    /// the library: `(disk, scheduler)`, or nil when its filesystem has no block device.
    private static func schedulerByShell(_ path: String) throws -> (disk: String, name: String)? {
        let script = """
            d=/sys/dev/block/$(stat -c '%Hd:%Ld' \(path)); [ -e "$d" ] || exit 0
            [ -e "$d/partition" ] && d="$d/.."; d=$(realpath "$d")
            echo "$(basename "$d") $(sed -n 's/.*\\[\\(.*\\)\\].*/\\1/p' "$d/queue/scheduler")"
            """
        let words = try TestSupport.shell(script).split(whereSeparator: \.isWhitespace).map(String.init)
        return words.count == 2 ? (words[0], words[1]) : nil
    }

    @Test func aPoolOnTheRootFilesystemNamesItsDisksScheduler() throws {
        try FS.withScratchPool(capacity: "16M") { directory, pool in
            let human = try FS.provideo(pool, "status")
            #expect(human.status == 0, "\(human.stderr)")
            let status = try TestSupport.poolStatus(pool)
            guard let expected = try Self.schedulerByShell(directory) else {
                #expect(status.ioSchedulers == nil)
                #expect(!human.stdout.contains("\nscheduler   "), "\(human.stdout)")
                return
            }
            #expect(status.ioSchedulers?.map(\.disk) == [expected.disk])
            #expect(status.ioSchedulers?.map(\.name) == [expected.name])
            #expect(human.stdout.contains("\nscheduler   \(expected.name) (\(expected.disk)): "), "\(human.stdout)")
        }
    }

    /// On a loop device, whose scheduler a test may set: each one's line in `status`, its
    /// fields in `status --json`, and `land`'s note.
    @Test(.enabled(if: TestSupport.isRoot, "needs root: a loop filesystem and its scheduler"))
    func eachSchedulerOfALoopDeviceIsNamed() throws {
        try LoopFilesystem.with("ext4", megabytes: 64) { fs in
            let pool = fs.mountPoint + "/pool"
            try FS.createPool(pool, capacity: "16M")
            defer { FS.destroyQuietly(pool) }
            let disk = (fs.device as NSString).lastPathComponent
            let file = "/sys/block/\(disk)/queue/scheduler"
            let original = try String(contentsOfFile: file, encoding: .utf8)
            defer { _ = try? TestSupport.shell("echo \(IOScheduler.active(in: original) ?? "none") > \(file)") }
            let expected: [(String, IOScheduler.IdlePriority, String)] = [
                ("none", .ignored, "none (\(disk)): ignores I/O priorities, so a landing competes with captures for the disk; "
                    + "cap it with `provideo land --rate "),
                ("mq-deadline", .heldBack, "mq-deadline (\(disk)): holds the landing's idle-priority I/O back while other "
                    + "I/O waits, up to "),
                ("bfq", .honoured, "bfq (\(disk)): serves the landing's idle-priority I/O only when no other I/O waits"),
            ]
            for (name, idle, line) in expected where original.contains(name) {
                try TestSupport.shell("echo \(name) > \(file)")
                let status = try TestSupport.poolStatus(pool)
                #expect(status.ioSchedulers?.count == 1)
                #expect(status.ioSchedulers?.first?.disk == disk && status.ioSchedulers?.first?.name == name)
                #expect(status.ioSchedulers?.first?.idlePriority == idle)
                if name == "mq-deadline" {
                    let aging = try String(contentsOfFile: "/sys/block/\(disk)/queue/iosched/prio_aging_expire", encoding: .utf8)
                    #expect(status.ioSchedulers?.first?.agingSeconds == Double(aging.trimmingCharacters(in: .whitespacesAndNewlines))! / 1000)
                }
                let human = try FS.provideo(pool, "status").stdout
                #expect(human.contains("\nscheduler   " + line), "\(human)")
            }

            try #require(original.contains("none"))
            try TestSupport.shell("echo none > \(file)")
            let destination = "/dev/shm/" + TestSupport.uniqueName("provideo-test-scheduler", suffix: ".mov")
            for capped in [true, false] {
                let record = try FS.provideo(pool, "record", destination + "\(capped)", "--land", "background",
                                             stdin: Data(TestSupport.pattern(1 << 20, seed: 5)))
                try #require(record.status == 0, "\(record.stderr)")
                defer { try? FileManager.default.removeItem(atPath: destination + "\(capped)") }
                let land = try TestSupport.run("provideo", ["--pool", pool, "land"] + (capped ? ["--rate", "8000M"] : []))
                #expect(land.status == 0, "\(land.stderr)")
                let note = "note: landing at idle I/O priority on none (\(disk)): ignores I/O priorities, so a landing "
                    + "competes with captures for the disk; "
                #expect(land.stderr.contains(note + (capped ? "the landing is capped by --rate\n" : "cap it with `provideo land --rate ")),
                        "\(land.stderr)")
            }
            let nothing = try FS.provideo(pool, "land")
            #expect(nothing.stdout == "nothing to land\n" && nothing.stderr.isEmpty, "\(nothing.stderr)")
        }
    }
}

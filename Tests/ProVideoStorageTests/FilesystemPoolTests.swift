import CProVideo
import Foundation
import Glibc
import TestSupport
import Testing
@testable import ProVideoStorage

/// Every test on loop-mounted filesystems, tmpfs and overlayfs. They need root, and run one at
/// a time (the parent suite is serialized, which covers every nested suite in the other
/// Filesystem*/Fault* files).
@Suite(.serialized, .enabled(if: TestSupport.isRoot, "needs root: loop devices, mounts and sysctls"))
struct FilesystemTests {}

extension FilesystemTests {
    /// Pool create/status/resize/replenish/destroy through the CLI, on each filesystem.
    @Suite struct Pools {
        @Test(arguments: FS.types)
        func lifecycleThroughTheCLI(type: String) throws {
            try FS.withPool(type, capacity: "32M") { fs, pool in

                var status = try TestSupport.poolStatus(pool)
                #expect(status.initialCapacity == 32 << 20)
                #expect(status.remainingCapacity == 32 << 20)
                #expect(status.busyReasons == [])
                #expect(status.filesystem == type)
                #expect(status.device.path == fs.device)
                let sector = try #require(Int(try TestSupport.shell("blockdev --getss \(fs.device)")
                    .trimmingCharacters(in: .whitespacesAndNewlines)))
                #expect(status.device.logicalSectorSize == sector)
                #expect(status.directIOAlignment.offset >= sector)
                try FS.expectReserveMatchesStat(pool, status)
                if type == "btrfs" {
                    #expect(try TestSupport.lsattrFlags(pool + "/reserve").contains("C"), "the reserve must be NOCOW")
                }
                let human = try FS.provideo(pool, "status")
                #expect(human.status == 0)
                #expect(human.stdout.contains("32.0 MiB"))

                // A recording takes capacity, rounded to the allocation unit; replenish gives it back.
                let unit = try FS.allocationUnit(status, mount: fs.mountPoint)
                let input = TestSupport.pattern(5_000_001, seed: 11)
                let destination = fs.mountPoint + "/take.mov"
                let recorded = try FS.provideo(pool, "record", destination, stdin: Data(input))
                #expect(recorded.status == 0, "\(recorded.stderr)")
                #expect(TestSupport.fileHolds(destination, input))
                status = try TestSupport.poolStatus(pool)
                #expect(status.initialCapacity == 32 << 20)
                #expect(status.remainingCapacity == (32 << 20) - TestSupport.roundUp(5_000_001, unit))
                try FS.expectReserveMatchesStat(pool, status)

                let replenished = try FS.provideo(pool, "replenish")
                #expect(replenished.status == 0, "\(replenished.stderr)")
                status = try TestSupport.poolStatus(pool)
                #expect(status.remainingCapacity == 32 << 20)
                try FS.expectReserveMatchesStat(pool, status)
                if type == "btrfs" {
                    #expect(try TestSupport.lsattrFlags(pool + "/reserve").contains("C"), "the rebuilt reserve must be NOCOW")
                }

                // Grow, then shrink: both set initialCapacity and the reserve.
                for (text, bytes) in [("48M", Int64(48 << 20)), ("16MiB", Int64(16 << 20))] {
                    let resized = try FS.provideo(pool, "resize", text)
                    #expect(resized.status == 0, "resize \(text): \(resized.stderr)")
                    status = try TestSupport.poolStatus(pool)
                    #expect(status.initialCapacity == bytes)
                    #expect(status.remainingCapacity == bytes)
                    try FS.expectReserveMatchesStat(pool, status)
                }
                // The shrink freed the blocks past the new end.
                #expect(try TestSupport.statSizes(pool + "/reserve").allocated < 17 << 20)
                let checked = try FS.provideo(pool, "check")
                #expect(checked.status == 0, "\(checked.stdout)\(checked.stderr)")

                let destroyed = try FS.provideo(pool, "destroy")
                #expect(destroyed.status == 0, "\(destroyed.stderr)")
                #expect(!FileManager.default.fileExists(atPath: pool))
                let gone = try FS.provideo(pool, "status", "--json")
                #expect(gone.status == 1)
                #expect(gone.stderr.contains("no pool"))
                #expect(TestSupport.fileHolds(destination, input), "destroy must not touch recordings")
            }
        }

        /// A loop device with 4096-byte logical sectors: the pool reports and uses 4096.
        @Test(arguments: ["ext4", "xfs"])
        func fourKSectorDevice(type: String) throws {
            try FS.withPool(type, sectorSize: 4096, capacity: "16M") { fs, pool in
                let status = try TestSupport.poolStatus(pool)
                #expect(status.device.logicalSectorSize == 4096)
                #expect(status.directIOAlignment.offset == 4096)
                #expect(status.directIOAlignment.memory > 0 && status.directIOAlignment.memory <= 4096)
                #expect(status.directIOAlignment.memory & (status.directIOAlignment.memory - 1) == 0)
                try FS.expectReserveMatchesStat(pool, status)

                // An odd-sized recording on 4K sectors is still exact.
                let input = TestSupport.pattern(3_000_001, seed: 4096)
                let destination = fs.mountPoint + "/take.mov"
                let recorded = try FS.provideo(pool, "record", destination, stdin: Data(input))
                #expect(recorded.status == 0, "\(recorded.stderr)")
                #expect(TestSupport.fileHolds(destination, input))
                let after = try TestSupport.poolStatus(pool)
                #expect(after.remainingCapacity == (16 << 20) - TestSupport.roundUp(3_000_001, 4096))
            }
        }

        /// The pool records the direct-I/O alignment the kernel reports for a file there
        /// (statx STATX_DIOALIGN), where the filesystem reports one (ext4, XFS).
        @Test(arguments: ["ext4", "xfs"])
        func recordsTheStatxAlignment(type: String) throws {
            try LoopFilesystem.with(type) { fs in
                let reported = try TestSupport.reportedDirectIOAlignment(in: fs.mountPoint)
                try #require(reported != nil, "\(type) should report STATX_DIOALIGN for a regular file")
                let pool = fs.mountPoint + "/pool"
                try FS.createPool(pool, capacity: "8M")
                defer { FS.destroyQuietly(pool) }
                let status = try TestSupport.poolStatus(pool)
                #expect(status.directIOAlignment == reported, "statx reports \(reported!) for a file on \(type)")
            }
        }
    }

    /// Whether a filesystem discards online is read from the mount as it is now: the same ext4
    /// and XFS, mounted again with and without `discard` (XFS ignores it on a remount), answer
    /// each way, and a subdirectory as its mount does.
    @Suite struct OnlineDiscard {
        @Test(arguments: ["ext4", "xfs"])
        func followsTheMountOption(type: String) throws {
            try LoopFilesystem.with(type, megabytes: 320) { fs in
                let directory = fs.mountPoint + "/captures"
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
                #expect(StorageFacts.mountedWithDiscard(directory) == false)
                try TestSupport.shell("umount \(fs.mountPoint) && mount -o discard \(fs.device) \(fs.mountPoint)")
                #expect(StorageFacts.mountedWithDiscard(directory) == true)
                #expect(StorageFacts.mountedWithDiscard(fs.mountPoint) == true)
                try TestSupport.shell("umount \(fs.mountPoint) && mount \(fs.device) \(fs.mountPoint)")
                #expect(StorageFacts.mountedWithDiscard(directory) == false)
                #expect(StorageFacts.mountedWithDiscard(fs.mountPoint + "/missing") == nil)
            }
        }
    }

    /// F6: where direct I/O does not bypass the page cache, create refuses up front.
    @Suite struct Refusal {
        @Test func tmpfsIsRefusedAndNothingIsLeft() throws {
            try LoopFilesystem.with("tmpfs", megabytes: 64) { fs in
                let pool = fs.mountPoint + "/pool"
                let result = try FS.provideo(pool, "create", "--capacity", "8M")
                defer { FS.destroyQuietly(pool) }
                #expect(result.status == 1)
                #expect(result.stderr.contains("tmpfs"), "\(result.stderr)")
                #expect(result.stderr.contains("page cache"), "\(result.stderr)")
                #expect(try FileManager.default.contentsOfDirectory(atPath: fs.mountPoint) == [])
                #expect(!Pool.isSupported(at: fs.mountPoint))
                let error = #expect(throws: ProVideoError.self) { try Pool.create(at: pool, capacity: 8 << 20) }
                #expect(error?.code == .unsupported)
                #expect(try FileManager.default.contentsOfDirectory(atPath: fs.mountPoint) == [])
            }
        }

        /// The usual set-up: a dedicated filesystem mounted at the pool's directory. The
        /// directory's own filesystem (tmpfs) decides, not its parent's (ext4).
        @Test func tmpfsMountPointAsThePoolDirectoryIsRefused() throws {
            try LoopFilesystem.with("tmpfs", megabytes: 64) { fs in
                let result = try FS.provideo(fs.mountPoint, "create", "--capacity", "8M")
                defer { FS.destroyQuietly(fs.mountPoint) }
                #expect(result.status == 1, "a pool was created on tmpfs: \(result.stdout)")
                #expect(result.stderr.contains("tmpfs"), "\(result.stderr)")
                #expect(try FileManager.default.contentsOfDirectory(atPath: fs.mountPoint) == [])
            }
        }

        /// The same set-up on btrfs: the pool must see btrfs (and set NOCOW), not the parent's ext4.
        @Test func btrfsMountPointAsThePoolDirectory() throws {
            try LoopFilesystem.with("btrfs") { fs in
                try FS.createPool(fs.mountPoint, capacity: "16M")
                defer { FS.destroyQuietly(fs.mountPoint) }
                let status = try TestSupport.poolStatus(fs.mountPoint)
                #expect(status.filesystem == "btrfs")
                #expect(status.device.path == fs.device)
                #expect(try TestSupport.lsattrFlags(fs.mountPoint + "/reserve").contains("C"), "the reserve must be NOCOW")
            }
        }

        /// Overlayfs over ext4 passes direct I/O through: create works, and so does a recording.
        @Test func overlayOverExt4Works() throws {
            try LoopFilesystem.with("ext4", megabytes: 128) { fs in
                let dirs = ["lower", "upper", "work", "merged"].map { fs.mountPoint + "/" + $0 }
                for dir in dirs { try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) }
                try TestSupport.shell("mount -t overlay overlay -o lowerdir=\(dirs[0]),upperdir=\(dirs[1]),workdir=\(dirs[2]) \(dirs[3])")
                defer { _ = try? TestSupport.shell("umount \(dirs[3]) || umount -l \(dirs[3])") }
                let pool = dirs[3] + "/pool"
                let created = try FS.provideo(pool, "create", "--capacity", "16M")
                defer { FS.destroyQuietly(pool) }
                #expect(created.status == 0, "\(created.stderr)")
                try #require(created.status == 0)
                let status = try TestSupport.poolStatus(pool)
                #expect(status.filesystem == "overlay")
                #expect(status.initialCapacity == 16 << 20)
                #expect(status.remainingCapacity == 16 << 20)

                let input = TestSupport.pattern(3_000_007, seed: 6)
                let destination = dirs[3] + "/take.mov"
                let recorded = try FS.provideo(pool, "record", destination, stdin: Data(input))
                #expect(recorded.status == 0, "\(recorded.stderr)")
                #expect(TestSupport.fileHolds(destination, input))
                let unit = try FS.allocationUnit(status, mount: dirs[3])
                #expect(try TestSupport.poolStatus(pool).remainingCapacity == (16 << 20) - TestSupport.roundUp(3_000_007, unit))
                let destroyed = try FS.provideo(pool, "destroy")
                #expect(destroyed.status == 0, "\(destroyed.stderr)")
            }
        }
    }

    /// F4 and F5: growing the reserve.
    @Suite struct Growth {
        /// F4: a grow past the free space fails, says how much was missing, and leaves the
        /// reserve's size, its allocated blocks and the filesystem's free space exactly as before.
        @Test(arguments: FS.types)
        func failedGrowIsRolledBackExactly(type: String) throws {
            try FS.withPool(type, capacity: "32M") { fs, pool in
                let reserve = pool + "/reserve"
                let unit = try FS.allocationUnit(try TestSupport.poolStatus(pool), mount: fs.mountPoint)
                for factor in [2.0, 1.5, 1.1] {
                    let before = try TestSupport.statSizes(reserve)
                    let space = try TestSupport.freeSpace(fs.mountPoint)
                    let target = before.size + Int64(Double(space.available) * factor)
                    let result = try FS.provideo(pool, "resize", String(target))
                    #expect(result.status == 1, "\(factor)x should fail: \(result.stdout)")
                    let needed = TestSupport.roundUp(target, unit) - before.size
                    let missing = FS.missingBytes(in: result.stderr)
                    #expect(missing != nil, "the error must say how many bytes were missing: \(result.stderr)")
                    if let missing {
                        // The pool keeps room for its own files beside the reserve, less what its
                        // spare already holds.
                        let spare = try TestSupport.statSizes(pool + "/spare").size
                        let headroom = max(MetadataHeadroom.bytes(blockSize: space.blockSize, directIOBlock: unit,
                                                                  capacity: before.size + needed) - spare, 0)
                        #expect(missing >= needed - space.free + headroom && missing <= needed - space.available + headroom,
                                "\(factor)x: missing \(missing), needed \(needed), headroom \(headroom), \(space)")
                    }
                    let after = try TestSupport.statSizes(reserve)
                    #expect(after.size == before.size, "\(factor)x changed the reserve's size")
                    #expect(after.allocated == before.allocated, "\(factor)x changed the reserve's allocated bytes")
                    #expect(try TestSupport.freeSpace(fs.mountPoint) == space, "\(factor)x changed the free space")
                    let status = try TestSupport.poolStatus(pool)
                    #expect(status.initialCapacity == 32 << 20)
                    #expect(status.remainingCapacity == before.size)
                }
                let before = try TestSupport.statSizes(reserve)
                let space = try TestSupport.freeSpace(fs.mountPoint)
                let target = before.size + Int64(Double(space.available) * 0.9)
                let result = try FS.provideo(pool, "resize", String(target))
                #expect(result.status == 0, "0.9x should succeed: \(result.stderr)")
                let status = try TestSupport.poolStatus(pool)
                #expect(status.initialCapacity == TestSupport.roundUp(target, unit))
                try FS.expectReserveMatchesStat(pool, status)
            }
        }

        /// F5: a btrfs pool at 80% of the filesystem grows by 5%: only the new range is
        /// allocated, and the reserve is NOCOW before anything is allocated.
        @Test func btrfsGrowAllocatesOnlyTheNewRange() throws {
            try LoopFilesystem.with("btrfs") { fs in
                final class Log: @unchecked Sendable {
                    let lock = NSLock()
                    var calls: [(offset: Int64, length: Int64, nocow: Int32)] = []
                }
                let log = Log()
                var calls = SystemCalls.live
                calls.fallocate = { fd, keep, offset, length in
                    let nocow = pv_get_nocow(fd)
                    log.lock.withLock { log.calls.append((offset, length, nocow)) }
                    return SystemCalls.live.fallocate(fd, keep, offset, length)
                }
                let path = fs.mountPoint + "/pool"
                let space = try TestSupport.freeSpace(fs.mountPoint)
                let eighty = space.available / 100 * 80 / 4096 * 4096
                let five = space.available / 100 * 5 / 4096 * 4096
                let pool = try Pool.create(at: path, capacity: eighty, systemCalls: calls)
                defer { FS.destroyQuietly(path) }
                #expect(try pool.initialCapacity == eighty)
                #expect(try TestSupport.lsattrFlags(path + "/reserve").contains("C"))
                let grown = try pool.resize(to: eighty + five)
                #expect(grown == eighty + five)
                let recorded = log.lock.withLock { log.calls }
                #expect(!recorded.isEmpty)
                #expect(recorded.allSatisfy { $0.nocow == 1 }, "fallocate ran on a file without NOCOW: \(recorded)")
                #expect(recorded.last.map { $0.offset == eighty && $0.length == five } == true,
                        "the grow must allocate only [\(eighty), +\(five)): \(recorded)")
                let status = try TestSupport.poolStatus(path)
                #expect(status.initialCapacity == eighty + five)
                try FS.expectReserveMatchesStat(path, status)
            }
        }

        /// Replenish is best effort: nothing free → a "not enough space" failure that changes
        /// nothing; a little free → a partial refill; space back → the full capacity.
        @Test(arguments: FS.types)
        func replenishIsBestEffort(type: String) throws {
            try FS.withPool(type, capacity: "32M") { fs, pool in
                let input = TestSupport.pattern(8 << 20, seed: 8)
                let recorded = try FS.provideo(pool, "record", fs.mountPoint + "/take.mov", stdin: Data(input))
                #expect(recorded.status == 0, "\(recorded.stderr)")
                let afterRecording = try TestSupport.poolStatus(pool).remainingCapacity
                #expect(afterRecording == 24 << 20)

                try FS.fill(fs.mountPoint)
                let before = try TestSupport.statSizes(pool + "/reserve")
                let refused = try FS.provideo(pool, "replenish")
                #expect(refused.status == 1, "replenish on a full filesystem: \(refused.stdout)")
                #expect(refused.stderr.contains("space"), "\(refused.stderr)")
                let after = try TestSupport.statSizes(pool + "/reserve")
                #expect(after.size == before.size)
                #expect(after.allocated == before.allocated)
                #expect(try TestSupport.poolStatus(pool).remainingCapacity == afterRecording)

                try FileManager.default.removeItem(atPath: fs.mountPoint + "/filler")
                _ = try? TestSupport.shell(type == "btrfs" ? "btrfs filesystem sync \(fs.mountPoint)" : "sync -f \(fs.mountPoint)")
                let restored = try FS.provideo(pool, "replenish")
                #expect(restored.status == 0, "\(restored.stderr)")
                let status = try TestSupport.poolStatus(pool)
                #expect(status.remainingCapacity == 32 << 20)
                try FS.expectReserveMatchesStat(pool, status)
            }
        }
    }
}

import Foundation
import Glibc
import TestSupport
import Testing

/// A pool meant for a filesystem /etc/fstab mounts, while that filesystem is not mounted: the
/// mount point is a plain directory of the root filesystem. `status` says to mount it (not to
/// create a pool), `create` refuses unless `--force`, and `destroy` never removes the mount
/// point. The tests name their own table (`PROVIDEO_FSTAB`, read by debug builds only).
@Suite struct UnmountedMountPointTests {
    private func withTable(_ body: (_ table: String, _ mountPoint: String) throws -> Void) throws {
        try TestSupport.withScratch { scratch in
            let mountPoint = scratch + "/rec"
            try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
            let table = scratch + "/fstab"
            try "# test table\nLABEL=rec \(mountPoint) ext4 defaults,nofail 0 2\n"
                .write(toFile: table, atomically: false, encoding: .utf8)
            defer { _ = try? TestSupport.run("provideo", ["--pool", mountPoint, "destroy"]) }
            try body(table, mountPoint)
        }
    }

    private func provideo(_ table: String, _ arguments: String...) throws -> TestSupport.ProcessResult {
        try TestSupport.run("provideo", arguments, environment: ["PROVIDEO_FSTAB": table])
    }

    @Test func createIsRefusedUnlessForced() throws {
        try withTable { table, mountPoint in
            let pool = mountPoint + "/pool"
            let refused = try provideo(table, "--pool", pool, "create", "--capacity", "16M", "--bandwidth", "1G")
            #expect(refused.status == 1 && refused.stdout.isEmpty)
            #expect(refused.stderr.hasPrefix("provideo: cannot create a pool at \(pool): \(table) mounts LABEL=rec (ext4) at "
                                             + "\(mountPoint), which is not mounted: \(pool) is on the filesystem beneath ("),
                    "\(refused.stderr)")
            #expect(refused.stderr.contains("; mount it (`mount \(mountPoint)`) and create the pool again, or create it on "
                                            + "the filesystem beneath; run `provideo --pool \(pool) create --capacity SIZE "
                                            + "--force`\n"), "\(refused.stderr)")
            #expect(!FileManager.default.fileExists(atPath: pool))

            let forced = try provideo(table, "--pool", pool, "create", "--capacity", "16M", "--bandwidth", "1G", "--force")
            #expect(forced.status == 0, "\(forced.stderr)")
            #expect(forced.stdout.hasPrefix("created a pool of 16.0 MiB"))
            let status = try provideo(table, "--pool", pool, "status")
            #expect(status.status == 0)
            #expect(status.stderr.contains("warning: \(table) mounts LABEL=rec (ext4) at \(mountPoint), which is not mounted"),
                    "\(status.stderr)")
            // Below the mount point, the pool's directory is the pool's: destroy removes it.
            let destroyed = try provideo(table, "--pool", pool, "destroy")
            #expect(destroyed.status == 0, "\(destroyed.stderr)")
            #expect(!FileManager.default.fileExists(atPath: pool))
        }
    }

    @Test func statusSaysToMountItNotToCreateAPool() throws {
        try withTable { table, mountPoint in
            let result = try provideo(table, "--pool", mountPoint + "/pool", "status")
            #expect(result.status == 1)
            #expect(result.stderr.hasPrefix("provideo: no pool at \(mountPoint)/pool: \(table) mounts LABEL=rec (ext4) at "
                    + "\(mountPoint), which is not mounted: \(mountPoint)/pool is on the filesystem beneath ("), "\(result.stderr)")
            #expect(result.stderr.hasSuffix("); mount it (`mount \(mountPoint)`) to see the pool on it\n"), "\(result.stderr)")
            #expect(!result.stderr.contains("create"))
            // The real table names no such mount point: the usual advice.
            let plain = try TestSupport.run("provideo", ["--pool", mountPoint + "/pool", "status"])
            #expect(plain.stderr.contains("no pool at \(mountPoint)/pool; run `provideo --pool \(mountPoint)/pool create --capacity SIZE`"),
                    "\(plain.stderr)")
        }
    }

    @Test func destroyLeavesTheMountPoint() throws {
        try withTable { table, mountPoint in
            let created = try provideo(table, "--pool", mountPoint, "create", "--capacity", "16M", "--bandwidth", "1G", "--force")
            try #require(created.status == 0, "\(created.stderr)")
            let destroyed = try provideo(table, "--pool", mountPoint, "destroy")
            #expect(destroyed.status == 0, "\(destroyed.stderr)")
            #expect(destroyed.stdout == "destroyed the pool at \(mountPoint)\n")
            var isDirectory: ObjCBool = false
            #expect(FileManager.default.fileExists(atPath: mountPoint, isDirectory: &isDirectory) && isDirectory.boolValue)
            #expect((try FileManager.default.contentsOfDirectory(atPath: mountPoint)) == [])
            // With the real table, nothing marks it: destroy removes the directory it held.
            try #require(try provideo(table, "--pool", mountPoint, "create", "--capacity", "16M", "--bandwidth", "1G",
                                      "--force").status == 0)
            #expect(try TestSupport.run("provideo", ["--pool", mountPoint, "destroy"]).status == 0)
            #expect(!FileManager.default.fileExists(atPath: mountPoint))
        }
    }
}

import Foundation
import Glibc

/// The pool's one space invariant read straight off its files, as a test's oracle: the
/// reserve's size plus every capture directory's `data` (a regular file, not followed: a
/// running or a kept capture's grant) is at most `initialCapacity` in `pool.json`
/// (Docs/CAPTURE-LIFECYCLE.md, "One invariant for the space"). Read independently of the
/// library's `CapacityAccount`, so a wrong account cannot agree with itself.
package enum CapacityInvariant {
    package struct Reading: CustomStringConvertible {
        package var capacity: Int64
        package var reserve: Int64
        package var grants: Int64
        package var description: String { "reserve \(reserve) + grants \(grants) against capacity \(capacity)" }
        package var holds: Bool { reserve + grants <= capacity }
    }

    package static func read(_ pool: String) throws -> Reading {
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: pool + "/pool.json")))
        let capacity = ((json as? [String: Any])?["initialCapacity"] as? NSNumber)?.int64Value ?? -1
        var grants: Int64 = 0
        let captures = pool + "/captures"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: captures)) ?? [] {
            var directory = stat(), data = stat()
            guard lstat(captures + "/" + name, &directory) == 0, directory.st_mode & S_IFMT == S_IFDIR,
                  lstat(captures + "/" + name + "/data", &data) == 0, data.st_mode & S_IFMT == S_IFREG else { continue }
            grants += Int64(data.st_size)
        }
        // No reserve (a destroy killed after removing it) holds nothing.
        var reserve = stat()
        let reserveSize = lstat(pool + "/reserve", &reserve) == 0 ? Int64(reserve.st_size) : 0
        return Reading(capacity: capacity, reserve: reserveSize, grants: grants)
    }
}

import Foundation
import TestSupport
import Testing

/// `record` into a pool too small for its input keeps what fits, to the reserve's last byte,
/// and says "storage full" (field report: a 1 MiB read that did not fit whole was dropped and
/// the command claimed no input had arrived).
@Suite struct StorageFullRecordTests {
    @Test func whatFitsIsKeptAndTheRestIsReported() throws {
        try TestSupport.withScratch("storage-full") { scratch in
            let pool = scratch + "/pool"
            try FS.createPool(pool, capacity: "4M")
            defer { FS.destroyQuietly(pool) }
            let capacity = Int(try TestSupport.poolStatus(pool).initialCapacity)
            let input = TestSupport.pattern(6_000_000, seed: 5)
            let result = try FS.provideo(pool, "record", scratch + "/take.mov", stdin: Data(input))
            #expect(result.status == 1)
            #expect(result.stderr.contains("storage full"), "\(result.stderr)")
            let kept = TestSupport.fileHolds(scratch + "/take.mov", Array(input[0..<capacity]))
            #expect(kept, "the recording is not the first \(capacity) bytes of the input")
        }
    }
}

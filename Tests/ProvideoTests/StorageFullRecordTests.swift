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
            #expect(!result.stderr.contains("MOV/MP4"), "no movie, no movie hint: \(result.stderr)")
        }
    }

    /// An ISO BMFF box: a 32-bit big-endian size, a four-character type, `payload`.
    static func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        let size = UInt32(8 + payload.count)
        return [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: size >> $0) } + Array(type.utf8) + payload
    }

    /// A MOV cut off by a full pool says whether it plays and what to do (issue 42: a take
    /// without its `moov` was unplayable and nothing said so): written front to back (`ftyp`,
    /// then a long `mdat`, the index to come last), it lacks its index, and the message names
    /// the fix; fragmented (`moov`, then `moof`/`mdat` pairs), it plays up to its last whole
    /// fragment.
    @Test(arguments: ["front to back", "fragmented"])
    func aCutOffMovieSaysWhetherItPlays(_ layout: String) throws {
        try TestSupport.withScratch("storage-full-mov") { scratch in
            let pool = scratch + "/pool"
            try FS.createPool(pool, capacity: "4M")
            defer { FS.destroyQuietly(pool) }
            let ftyp = Self.box("ftyp", Array("qt  ".utf8) + [0, 0, 2, 0] + Array("qt  ".utf8))
            var input: [UInt8]
            if layout == "front to back" {
                // An mdat that announces 6 MB, then its samples: the pool takes 4 MiB of it.
                input = ftyp + Self.box("mdat", TestSupport.pattern(6_000_000, seed: 7))
            } else {
                input = ftyp + Self.box("moov", [UInt8](repeating: 0, count: 64))
                for fragment in 0..<12 {
                    input += Self.box("moof", [UInt8](repeating: 1, count: 32))
                        + Self.box("mdat", TestSupport.pattern(500_000, seed: UInt64(fragment)))
                }
            }
            let result = try FS.provideo(pool, "record", scratch + "/take.mov", stdin: Data(input))
            #expect(result.status == 1 && result.stderr.contains("storage full"), "\(result.stderr)")
            if layout == "front to back" {
                #expect(result.stderr.contains("index (the moov box, written last) is missing")
                        && result.stderr.contains("frag_keyframe+empty_moov"), "\(result.stderr)")
            } else {
                #expect(result.stderr.contains("fragmented MOV/MP4: players open it up to its last whole fragment")
                        && !result.stderr.contains("is missing"), "\(result.stderr)")
            }
        }
    }
}

import Foundation
import Glibc

/// A recording salvaged from a capture whose recorder died.
public struct SalvagedRecording: Codable, Sendable {
    /// Where it went: the destination, a "recovered" sibling of it, or a file in the pool.
    public var path: String
    /// Its length in bytes: the capture's last committed length.
    public var length: Int64
}

/// What `provideo list` shows.
public struct PoolListing: Codable, Sendable {
    public struct Held: Codable, Sendable {
        public var path: String
        public var destination: String
        public var length: Int64
        public var reason: String
    }

    public var capture: PoolStatus.Capture?
    /// Recordings kept in the pool because their destination could not take them.
    public var recordings: [Held]
}

extension Pool {
    /// The capture in progress and the recordings the pool holds.
    public func listing() throws -> PoolListing {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: layout.recordings)) ?? []
        let held = files.filter { $0.hasSuffix(".json") }.sorted().compactMap { name -> PoolListing.Held? in
            guard let bytes = try? FileSystem.readSmallFile(layout.recordings + "/" + name),
                  let note = try? JSONDecoder().decode(HeldRecording.self, from: Data(bytes)) else { return nil }
            return PoolListing.Held(path: note.path, destination: note.destination, length: note.length, reason: note.reason)
        }
        return PoolListing(capture: try status().capture, recordings: held)
    }

    /// Checks the pool's accounting against what the filesystem really allocated. Returns one
    /// sentence per problem; empty when the pool is consistent:
    /// - the reserve is fully allocated and holds no blocks past its end;
    /// - `remainingCapacity` does not exceed what is really reserved;
    /// - no capture is left without a live owner (it would be salvaged by `open`);
    /// - the reserve's size is a whole number of allocation units.
    public func check() throws -> [String] {
        var problems: [String] = []
        let reserveFile = reserve(layout.reserve)
        let facts = FileSystem.exists(layout.reserve) ? try FileSystem.facts(layout.reserve) : nil
        let size = Int64(facts?.size ?? 0)
        let allocated = Int64(facts?.allocated_bytes ?? 0)
        let block = Int64(max(facts?.block_size ?? 512, 512))
        if allocated < size {
            problems.append("the reserve is \(size) bytes but only \(allocated) are allocated")
        }
        if allocated > (size + block - 1) / block * block {
            problems.append("the reserve holds \(allocated - size) bytes allocated past its end")
        }
        if size % reserveFile.unit != 0 {
            problems.append("the reserve's size \(size) is not a multiple of \(reserveFile.unit)")
        }
        let busy = try busyReasons()
        if FileSystem.exists(layout.captureDirectory) && !busy.contains(.capturing) {
            problems.append("a capture is in the pool with no live recorder; run `provideo recover`")
        }
        if let journal = try? CaptureJournal.load(layout.captureJournal), busy.contains(.capturing) {
            let data = FileSystem.exists(layout.captureData) ? Int64(try FileSystem.facts(layout.captureData).allocated_bytes) : 0
            if try remainingCapacity() > journal.capacityAtStart || data < journal.capacityAtStart - block {
                problems.append("the capture's file holds \(data) bytes, less than the capacity it reports")
            }
        } else if try remainingCapacity() > allocated {
            problems.append("remainingCapacity \(try remainingCapacity()) exceeds the \(allocated) bytes really reserved")
        }
        return problems
    }
}

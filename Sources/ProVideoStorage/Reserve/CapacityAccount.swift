import Glibc

/// The pool's capacity, counted in one place (issue 26): what the reserve holds, what each
/// running capture's file was granted and what it has written, and what the reserve may grow
/// back to. Every capacity figure the pool reports or acts on comes from here:
/// `Pool.remainingCapacity` (Apple's `remainingCapacity`), `replenish`, the repair of a reserve
/// a power cut left too large, a finished capture's give-back, and `Capture.remainingCapacity`.
///
/// Sizes are read from the pool's files, so they are summed without overflow (a member of the
/// pool's group could plant many sparse files of the largest size). Read it under the reserve
/// lock for a snapshot never over: a grant grows a capture's file, then cuts the reserve, under
/// the lock; a return cuts the capture's file outside it, then grows the reserve under it, so
/// the snapshot may be short by one return step (`Pool.returnStep`).
struct CapacityAccount {
    /// What one running capture's file holds.
    struct CaptureShare {
        /// Bytes its file was granted (its size).
        var granted: Int64
        /// Bytes it has written, from its progress block, rounded up to the reserve's unit.
        var written: Int64
    }

    /// Bytes of the reserve.
    var reserve: Int64
    var captures: [CaptureShare]
    /// The capacity the pool was created or resized to (`pool.json`).
    var initialCapacity: Int64
    /// The reserve's allocation unit.
    var unit: Int64

    /// Reads the reserve's size and every running capture's file (`data`) and progress block
    /// (`progress`) now. A capture whose file is gone (it finished meanwhile) holds nothing; one
    /// whose file cannot be looked at holds an unknown share, so the account cannot be made:
    /// taken for 0, a regrowth or `replenish` grew the reserve into that capture's grant.
    /// - Throws: the reserve's statx error; a capture file's statx error other than ENOENT.
    static func read(reserve: Reserve, captures: [(data: String, progress: String)],
                     initialCapacity: Int64) throws -> CapacityAccount {
        let shares = try captures.map { files in
            let granted: Int64
            do {
                granted = Int64(clamping: try FileSystem.facts(files.data).size)
            } catch let error as ProVideoError where error.errno == ENOENT {
                granted = 0
            }
            return CaptureShare(granted: granted, written: reserve.rounded(CaptureJournal.readCounter(files.progress)))
        }
        return CapacityAccount(reserve: try reserve.size(), captures: shares, initialCapacity: initialCapacity,
                               unit: reserve.unit)
    }

    /// Bytes the captures' files hold: their grants.
    var held: Int64 { captures.map(\.granted).saturatingSum() }

    /// Bytes captures can still write, together: the reserve plus what each capture was granted
    /// and has not written yet.
    var remaining: Int64 { (captures.map { max($0.granted - $0.written, 0) } + [reserve]).saturatingSum() }

    /// The most the reserve may hold: `initialCapacity` less what the captures hold, in whole
    /// units, never negative.
    var reserveLimit: Int64 { max(initialCapacity - held, 0) / unit * unit }

    /// Bytes the reserve lacks to reach its limit (what `replenish` adds), never negative.
    var missing: Int64 { max(initialCapacity - held - reserve, 0) }

    /// A running capture's own remaining capacity: what its file was granted beyond `length`,
    /// plus the reserve. Read `granted` before the reserve: a grant in progress then makes it
    /// short by that grant, never over.
    static func remaining(granted: Int64, length: Int64, reserve: Int64) -> Int64 {
        [max(granted - length, 0), max(reserve, 0)].saturatingSum()
    }
}

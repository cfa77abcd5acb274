import Glibc
import ProVideoSystem
import ProVideoJournal

/// The pool's capacity, counted in one place (issues 26 and 63): what the reserve holds, what
/// each capture's file was granted (a running one's and a kept dead one's alike) and what a
/// running one has written, and what the reserve may grow back to: reserve + grants ≤
/// capacity, the one invariant every operation that changes the reserve keeps. Every capacity figure the pool reports or acts on comes from here:
/// `Pool.remainingCapacity` (Apple's `remainingCapacity`), `replenish`, the repair of a reserve
/// a power cut left too large, a finished capture's give-back, and `Capture.remainingCapacity`.
///
/// Sizes are read from the pool's files, so they are summed without overflow (a member of the
/// pool's group could plant many sparse files of the largest size). The grants in flight are
/// counted from their claims (`ReserveClaims`): their bytes are the reserve's no longer but
/// their capture's, whether its fallocate has given its file them yet or not (a capture's
/// share is the larger of its file's size and its claim's end). Read under the size lock and
/// the reserve lock, the snapshot is exact but for returns: a grant claims, then grows a
/// capture's file, then cuts the reserve and clears its claim (under the size lock), and each
/// step leaves the figures as they were; a return cuts the capture's file, then grows the
/// reserve under the size lock, so the snapshot may be short by one return step
/// (`CaptureCompletion.returnStep`). Under the reserve lock alone a cut in flight is placed by its record
/// (`ReserveClaims.Totals.held(reserveSize:)`); one its record cannot place makes it short by
/// that cut, never over.
struct CapacityAccount {
    /// What one running capture's file holds.
    struct CaptureShare {
        /// Bytes its file was granted: its size, or its grant in flight's end.
        var granted: Int64
        /// Bytes it has written, from its progress block, rounded up to the reserve's unit
        /// (`granted` when the block is gone).
        var written: Int64
        /// Why its progress block could not be read: its written bytes, and so the room it
        /// holds, are unknown (`remaining` throws this).
        var unreadable: ProVideoError?
        /// Why its file's grant cannot be counted (`data` is not a regular file of one link):
        /// what it holds of the pool is unknown, so nothing that grows the reserve may act
        /// (`held` throws this, and `granted` is 0 for the floors only).
        var uncountable: ProVideoError?
    }

    /// Bytes of the reserve (its file's size).
    var reserve: Int64
    /// Every slot's grants in flight, in bytes: the reserve still holds them.
    var claims: ReserveClaims.Totals
    var captures: [CaptureShare]
    /// The capacity the pool was created or resized to (`pool.json`).
    var initialCapacity: Int64
    /// The reserve's allocation unit.
    var unit: Int64

    /// Reads the reserve's size and every capture's file (`data`) and progress block
    /// (`progress`) now, running or kept. A capture whose file is gone (it finished meanwhile)
    /// holds nothing; one whose file is not a regular file of one link (a link, a directory, a
    /// second name of another capture's file) holds an unknown share (`uncountable`): taken for
    /// its own size, a `replenish` added back the whole grant it stood for.
    /// - Throws: the reserve's statx error; a capture file's statx error other than ENOENT.
    /// A capture that is not running (`running` false: dead or its liveness unknown) writes
    /// nothing more: its whole grant is held and none of it is room (short, never over).
    static func read(reserve: Reserve, claims: ReserveClaims.Totals,
                     captures: [(data: String, progress: String, running: Bool)],
                     initialCapacity: Int64) throws -> CapacityAccount {
        let shares = try captures.map { files in
            var uncountable: ProVideoError?
            // The progress read on both sides of the grant's: a capture that published more
            // between them would make the share short by it (a status stream then saw the
            // capacity rise by 80 KiB once the next figure was read whole). After three tries
            // the later figure stands: short, never over. A progress block gone means the
            // capture is ending: its share counts no room left (short, never over).
            var unreadable: ProVideoError?
            func readWritten() -> Int64? {
                do { return try CaptureJournal.readWritten(files.progress) } catch {
                    unreadable = error as? ProVideoError ?? ProVideoError(.ioError, "\(error)", path: files.progress)
                    return nil
                }
            }
            var written = readWritten()
            var granted: Int64 = 0
            for _ in 0..<3 {
                do {
                    let facts = try FileSystem.factsWithoutFollowing(files.data)
                    if let refusal = EvidenceFile.refusal(facts, expected: S_IFREG, path: files.data) {
                        uncountable = ProVideoError(.corruptState, "the grant of capture "
                                                    + "\(FileSystem.lastComponent(of: FileSystem.parent(of: files.data))) "
                                                    + "cannot be counted: \(refusal.message)", path: files.data)
                        granted = 0
                        break
                    }
                    granted = max(Int64(clamping: facts.size), claims.claimEnds[facts.inode] ?? 0)
                } catch let error as ProVideoError where error.errno == ENOENT {
                    granted = 0
                }
                let after = readWritten()
                defer { written = after }
                if after == written || unreadable != nil { break }
            }
            return CaptureShare(granted: granted, written: files.running ? written.map(reserve.rounded) ?? granted : granted,
                                unreadable: files.running ? unreadable : nil, uncountable: uncountable)
        }
        return CapacityAccount(reserve: try reserve.size(), claims: claims, captures: shares,
                               initialCapacity: initialCapacity, unit: reserve.unit)
    }

    /// Bytes the captures' files hold, running and kept: their grants.
    /// - Throws: the first capture's `uncountable`: a sum short by a grant would let the reserve
    ///   grow into it.
    var held: Int64 {
        get throws {
            if let uncountable = captures.lazy.compactMap(\.uncountable).first { throw uncountable }
            return captures.map(\.granted).saturatingSum()
        }
    }

    /// Bytes captures can still write, together: the reserve free of claims plus what each
    /// capture was granted and has not written yet.
    /// - Throws: a capture's progress block's read error (`CaptureShare.unreadable`) or its
    ///   grant's (`uncountable`): its share is unknown, and counting it whole or as none would
    ///   be a guess.
    var remaining: Int64 {
        get throws {
            if let unknown = captures.lazy.compactMap({ $0.uncountable ?? $0.unreadable }).first { throw unknown }
            return (captures.map { max($0.granted - $0.written, 0) } + [ownReserve]).saturatingSum()
        }
    }

    /// What `remaining` is at least, for a figure that must be shown even when a capture's
    /// progress block or grant cannot be read (`status`, `metrics`): such a capture counts as
    /// having written all it was granted (short, never over). Admission, `replenish` and every
    /// other decision use `remaining`, which throws instead.
    /// - Returns: the bytes, and why each capture that made them a floor was unknown (empty:
    ///   the figure is exact, `remaining`'s).
    var remainingFloor: (bytes: Int64, unknown: [ProVideoError]) {
        // An unreadable share's `written` is its `granted`, an uncountable one's both are 0
        // (`read`): neither adds room here.
        ((captures.map { max($0.granted - $0.written, 0) } + [ownReserve]).saturatingSum(),
         captures.compactMap { $0.uncountable ?? $0.unreadable })
    }

    /// Bytes of the reserve that are the reserve's: its size less the grants in flight, which
    /// the captures' shares count.
    var ownReserve: Int64 { max(reserve - (claims.held(reserveSize: reserve) ?? claims.total), 0) }

    /// The most the reserve may hold: `initialCapacity` less what the captures hold, in whole
    /// units, never negative. The one invariant every operation that changes the reserve keeps
    /// (Docs/CAPTURE-LIFECYCLE.md, "One invariant for the space"): reserve + grants ≤ capacity.
    /// - Throws: as `held`.
    var reserveLimit: Int64 { get throws { max(initialCapacity - (try held), 0) / unit * unit } }

    /// Bytes the reserve lacks to reach its limit (what `replenish` adds), never negative: up
    /// to the limit in whole units, since a refill rounds up to one (a grant of an odd size,
    /// a file cut by hand, once took a replenish 2 KiB past the capacity).
    /// - Throws: as `held`.
    var missing: Int64 { get throws { max((try reserveLimit) - ownReserve, 0) } }

    /// Bytes the reserve holds beyond its limit (what a repair cuts), never negative.
    /// - Throws: as `held`.
    var excess: Int64 { get throws { max(ownReserve - (try reserveLimit), 0) } }

    /// Bytes by which the reserve and the grants exceed the capacity (0: the invariant holds).
    /// - Throws: as `held`.
    var overcommitted: Int64 { get throws { max(ownReserve + (try held) - initialCapacity, 0) } }

    /// A running capture's own remaining capacity: what its file was granted beyond `length`,
    /// plus the reserve. Read `granted` before the reserve: a grant in progress then makes it
    /// short by that grant, never over.
    static func remaining(granted: Int64, length: Int64, reserve: Int64) -> Int64 {
        [max(granted - length, 0), max(reserve, 0)].saturatingSum()
    }
}

/// Where a pool keeps its files. Everything lives in one directory on one filesystem:
///
///     pool.json       configuration: initialCapacity, alignment, device (replaced atomically)
///     pool.lock       OFD locks: mutations and busy reasons (see `PoolLock`)
///     reserve         the preallocated reserve; its size is the remaining capacity
///     capture/        the capture in progress, if any (see `CaptureJournal`)
///     recordings/     finished recordings the pool still holds (destination taken or unreachable,
///                     or waiting to land: `<take>.landing` records its progress)
///     recovered.json  the recordings salvaged from dead recorders, and where they went
///     spare           preallocated room for the pool's own small files (`MetadataSpare`)
struct PoolLayout: Sendable {
    let directory: String

    var configuration: String { directory + "/pool.json" }
    var lock: String { directory + "/pool.lock" }
    var reserve: String { directory + "/reserve" }
    /// A reserve being rebuilt after a capture; renamed over `reserve` when allocated.
    var newReserve: String { directory + "/reserve.new" }
    var captureDirectory: String { directory + "/capture" }
    var captureJournal: String { captureDirectory + "/capture.json" }
    var captureData: String { captureDirectory + "/data" }
    var captureProgress: String { captureDirectory + "/progress" }
    var captureCommit: String { captureDirectory + "/commit" }
    var recordings: String { directory + "/recordings" }
    var recoveredLog: String { directory + "/recovered.json" }
    /// Preallocated room for the pool's own files (`MetadataSpare`).
    var spare: String { directory + "/spare" }
}

import Glibc
import ProVideoSystem

/// Where a pool keeps its files. Everything lives in one directory on one filesystem:
///
///     pool.json       configuration: initialCapacity, alignment, device (replaced atomically)
///     pool.lock       OFD locks: mutations and busy reasons (see `PoolLock`)
///     reserve         the preallocated reserve; its size is the remaining capacity
///     captures/<id>/  each capture in progress (see `CaptureFiles`, `CaptureJournal`)
///     recordings/     finished recordings the pool still holds (destination taken or unreachable,
///                     or waiting to land: `<take>.landing` records its progress)
///     recovered.json  the recordings salvaged from dead recorders, and where they went
///     spare           preallocated room for the pool's own small files (`MetadataSpare`)
struct PoolLayout: Sendable {
    let directory: String

    /// Every path operation below `directory` is confined to it from now on (`Confinement`).
    init(directory: String) {
        self.directory = directory
        Confinement.register(directory, as: "the pool")
    }

    var configuration: String { directory + "/pool.json" }
    var lock: String { directory + "/pool.lock" }
    var reserve: String { directory + "/reserve" }
    /// A reserve being built by `create`; renamed to `reserve` when allocated.
    var newReserve: String { directory + "/reserve.new" }
    var captures: String { directory + "/captures" }
    /// The files of capture `id`.
    func capture(_ id: String) -> CaptureFiles { CaptureFiles(directory: captures + "/" + id) }
    /// Where a pool of format 1 kept its one capture; `repair(control:)` moves one found there into
    /// `captures/`.
    var legacyCapture: String { directory + "/capture" }
    var recordings: String { directory + "/recordings" }
    var recoveredLog: String { directory + "/recovered.json" }
    /// Preallocated room for the pool's own files (`MetadataSpare`).
    var spare: String { directory + "/spare" }

    /// The most entries `captures/` may hold: `maxCaptures` is at most 4096, and each dead
    /// capture waits for a salvage; more is a planted flood, refused before any work on it.
    static let captureEntriesLimit = 16_384

    /// The files of every capture in the pool, running or dead, in a stable order: the
    /// entries of `captures/` that are directories (not followed), or that cannot be looked
    /// at (their liveness is then unknown, `CaptureClaim`). The library makes nothing else
    /// there: a file or link is no capture's (`strayCaptureEntries`), and refuses nothing.
    /// - Throws: `.ioError` when `captures/` exists but cannot be listed, or cannot be looked at
    ///   (`FileSystem.isPresent`): an empty answer there would let a replenish grow the reserve
    ///   into running captures' grants; `.corruptState` past `captureEntriesLimit` entries.
    func captureFiles() throws -> [CaptureFiles] {
        try captureEntries().compactMap { $0.stray == nil ? $0.files : nil }
    }

    /// The entries of `captures/` that are not directories, each with what it is: no capture
    /// of the pool's (status and check name them; recovery and the account pass them by).
    /// - Throws: as `captureFiles`.
    func strayCaptureEntries() throws -> [(name: String, what: String)] {
        try captureEntries().compactMap { entry in entry.stray.map { (entry.files.id, $0) } }
    }

    /// Every entry of `captures/`, sorted, with what it is when it is not a directory.
    private func captureEntries() throws -> [(files: CaptureFiles, stray: String?)] {
        guard let names = try FileSystem.entries(captures, consequence: "nothing was changed") else { return [] }
        guard names.count <= Self.captureEntriesLimit else {
            throw ProVideoError(.corruptState, "\(captures) holds \(names.count) entries, more than a pool ever "
                                + "makes (\(Self.captureEntriesLimit)); nothing was changed: remove what is not a capture",
                                path: captures)
        }
        return names.sorted().compactMap { name in
            let files = capture(name)
            do {
                let facts = try FileSystem.factsWithoutFollowing(files.directory)
                return (files, EvidenceFile.refusal(facts, expected: S_IFDIR, path: files.directory).map { _ in
                    EvidenceFile.describe(facts.mode & UInt32(S_IFMT))
                })
            } catch let error as ProVideoError where error.errno == ENOENT {
                // Gone since the listing: a capture that finished.
                return nil
            } catch {
                return (files, nil)
            }
        }
    }
}

/// The files of one capture, in `captures/<id>/`:
///
///     capture.json   the journal (`CaptureJournal`), replaced atomically
///     data           the recording's bytes from offset 0; its size is the space granted so far
///     progress       one block: bytes appended so far (for remainingCapacity); the capture's
///                    owner holds an OFD lock on its byte 0 for the capture's whole life
///     commit         two 16-byte commit records at offsets 0 and 512
struct CaptureFiles: Sendable, Equatable {
    let directory: String

    var id: String { FileSystem.lastComponent(of: directory) }
    var journal: String { directory + "/capture.json" }
    var data: String { directory + "/data" }
    var progress: String { directory + "/progress" }
    var commit: String { directory + "/commit" }
}

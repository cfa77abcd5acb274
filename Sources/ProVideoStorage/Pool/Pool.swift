import FoundationEssentials
import Glibc
import Synchronization
import ProVideoSystem
import ProVideoIO
import ProVideoJournal

/// A pool: a system-wide, preallocated reserve of storage on one filesystem, shared by every
/// recorder process on the machine (Apple: "Pro Video Storage", `AVProVideoStorage`).
///
/// Every process that opens the same directory sees the same `initialCapacity`,
/// `remainingCapacity` and `busyReasons`: the state lives in the pool's files and locks,
/// not in memory. Opening a pool repairs what a killed process left behind (see `repair(control:)`).
///
/// A `Pool` may be shared between tasks and threads. `@unchecked Sendable` because: its `let`
/// properties are immutable or Sendable (`lock` only runs fcntl(2) on a descriptor it never
/// changes, and excludes this process's threads as well as other processes, see `PoolLock`);
/// its mutable state lives in `state`, a `Mutex`, so every read and write of it is atomic; and
/// the read-modify-write sequences on it (resize, start, repair) run under the pool's mutation
/// or reserve lock, which admit one thread at a time.
public final class Pool: @unchecked Sendable {
    /// The pool's directory, absolute.
    public let path: String
    let layout: PoolLayout
    let lock: PoolLock
    let calls: SystemCalls
    /// The pool directory's owner and group, which every pool file gets (`PoolAccess`).
    let access: PoolAccess
    let state: Mutex<PoolState>
    /// The slowest recent grant of this pool's captures, which sizes their leads (`GrantLead`).
    let slowestGrant = SlowestGrant()
    /// Whether this pool's grants move extents, as probed when it was opened (`ExtentExchange`).
    let exchange: ExtentExchange
    var configuration: PoolConfiguration {
        get { state.withLock { $0.configuration } }
        set { state.withLock { $0.configuration = newValue } }
    }
    /// Recordings that opening the pool salvaged from captures whose recorder had died.
    package internal(set) var salvaged: [SalvagedRecording] {
        get { state.withLock { $0.salvaged } }
        set { state.withLock { $0.salvaged = newValue } }
    }
    /// Captures of dead recorders that this process discarded because nothing of them was
    /// committed (no file was made at their destination).
    package internal(set) var discarded: [DiscardedCapture] {
        get { state.withLock { $0.discarded } }
        set { state.withLock { $0.discarded = newValue } }
    }
    /// Why opening the pool could not finish repairing what a killed process left, when the
    /// filesystem had no space or inode for it: reading the pool (status, list, check) still
    /// works, and the next operation that changes the pool repairs it first (and fails the
    /// same way until space is freed). nil when the pool is repaired.
    package internal(set) var repairFailure: ProVideoError? {
        get { state.withLock { $0.repairFailure } }
        set { state.withLock { $0.repairFailure = newValue } }
    }

    /// Captures of dead recorders that could not be salvaged because their files in the pool
    /// are not what the pool made (a link, another file type, a hard link): each error names
    /// the file. Nothing outside the pool was touched, the capture is left as it is, and the
    /// other captures were salvaged.
    package internal(set) var unsalvageable: [ProVideoError] {
        get { state.withLock { $0.unsalvageable } }
        set { state.withLock { $0.unsalvageable = newValue } }
    }

    /// Where a pool lives when neither `--pool` nor `PROVIDEO_POOL` says otherwise.
    public static let defaultPath = "/var/lib/provideo"

    /// The pool path to use: `explicit`, else `PROVIDEO_POOL`, else `defaultPath`.
    package static func resolvePath(_ explicit: String?,
                                   environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        FileSystem.absolute(explicit ?? environment["PROVIDEO_POOL"].flatMap { $0.isEmpty ? nil : $0 } ?? defaultPath)
    }

    init(path: String, configuration: PoolConfiguration, calls: SystemCalls) throws {
        self.path = path
        self.layout = PoolLayout(directory: path)
        self.access = try PoolAccess.of(directory: path)
        let lock = try PoolLock(path: layout.lock, access: access)
        self.lock = lock
        self.calls = calls
        self.state = Mutex(PoolState(configuration: configuration))
        let storage = configuration.storage
        // A read-only pool grants nothing; its probe would only fail to create its files.
        self.exchange = lock.readOnly ? ExtentExchange(off: nil)
            : ExtentExchange(probing: path, filesystemMagic: storage.filesystemMagic,
                             unit: Int64(max(storage.directIOAlignment.io, storage.blockSize)), calls: calls)
    }

    /// How this pool's grants move the reserve's space, as probed when it was opened (and
    /// turned to fallocate and cut if an exchange was refused since).
    package var grantMethod: GrantMethod { exchange.method }

    /// On XFS, why grants do not exchange extents; nil while they do, and on other filesystems.
    package var grantsNote: String? { exchange.note }

    // MARK: Support

    /// Whether `directory`'s filesystem and kernel can host a pool: direct I/O really bypasses
    /// the page cache there (proven by a probe write, see `DirectIOProbe`) and fallocate works.
    public static func isSupported(at directory: String) -> Bool {
        unsupportedReason(at: directory) == nil
    }

    /// Why `directory` cannot host a pool, or nil when it can.
    public static func unsupportedReason(at directory: String) -> String? {
        do {
            return DirectIOProbe.reasonUnsupported(directory: FileSystem.absolute(directory),
                                                   facts: try StorageFacts.read(directory))
        } catch { return "\(error)" }
    }

    // MARK: State

    /// The size the administrator chose, in bytes. Read from `pool.json` on each access, so a
    /// resize by another process shows at once.
    /// - Throws: `pool.json`'s read or decode error (`.corruptState`, `.ioError`,
    ///   `.permissionDenied`): the figure is unknown, never the one read when the pool was opened.
    public var initialCapacity: Int64 {
        get throws { try PoolConfiguration.load(layout.configuration).initialCapacity }
    }

    /// The alignment of every direct write into the pool, in bytes.
    package var directIOAlignment: DirectIOAlignment { configuration.storage.directIOAlignment }

    /// How many captures may run at once (`create(maxCaptures:)`); nil: no limit. Read as
    /// `initialCapacity` is, and throws as it does.
    public var maxCaptures: Int? {
        get throws { try PoolConfiguration.load(layout.configuration).captureLimit }
    }

    /// The durable write bandwidth captures are admitted against, in bits per second; nil when
    /// the pool has none (every capture is admitted). Captures may declare together
    /// `CaptureAdmission.admissibleShare` of it. Read as `initialCapacity` is, and throws as it does.
    public var bandwidth: Int64? {
        get throws { try PoolConfiguration.load(layout.configuration).bandwidth }
    }

    /// Bytes captures can still write, together: the reserve's size plus what each capture
    /// was granted and has not written yet. The same number in every process; a capture
    /// publishes its progress every 250 ms while it writes (Apple: `remainingCapacity`).
    ///
    /// A snapshot read on each access, under the pool's reserve size lock and reserve lock
    /// (`CapacityAccount`: the read waits for a cut of the reserve or a return step in
    /// progress, milliseconds as a rule, up to a second on a `discard` mount beside a writer;
    /// it never waits for a capture's fallocate): a read of the claims, one statx(2) of the
    /// reserve, and per running capture a statx of its file and a read of its 8-byte progress
    /// block. Any thread but a recorder's real-time one: it uses `Capture.remainingCapacity`,
    /// which never waits.
    /// - Throws: `.ioError` when the reserve cannot be read; `.busy` when the reserve lock
    ///   stayed taken for 30 s.
    public var remainingCapacity: Int64 {
        get throws {
            let reserveFile = reserve(layout.reserve)
            // With the claims of grants in flight, and no cut halfway: a reader that counted a
            // grant twice, or once short, saw the capacity rise mid-capture.
            return try lock.withReserveSize { try lock.withReserve { try capacityAccount(reserveFile).remaining } }
        }
    }

    /// What the pool is doing now, as seen from every process (Apple: `busyReasons`).
    ///
    /// A snapshot read on each access: three fcntl(2) `F_OFD_GETLK` calls on `pool.lock`. Any
    /// thread. `statusUpdates()` tells when it changes.
    /// - Throws: `.ioError` when the lock file cannot be queried.
    public var busyReasons: BusyReasons { get throws { try lock.heldByOthers() } }

    /// Whether the pool's filesystem refused to open its lock file for writing (EROFS: a
    /// read-only mount, or one the kernel remounted read-only after an error) when the pool was
    /// opened: reading it (status, listing, check) works; every change throws `.ioError`
    /// saying so, and opening it salvages nothing.
    package var isReadOnly: Bool { lock.readOnly }

    /// - Throws: `.ioError` (EROFS) saying what to do when the pool is read-only (`isReadOnly`).
    package func requireWritable() throws {
        if isReadOnly { throw lock.readOnlyError }
    }

    /// A snapshot of everything `provideo status` shows.
    public func status() throws -> PoolStatus {
        let reserveFile = reserve(layout.reserve)
        var allocated = try reserveFile.allocatedBytes()
        var captures: [PoolStatus.Capture] = []
        let census = try CaptureCensus.take(of: layout, calls)
        let stray = try layout.strayCaptureEntries().map { StrayCaptureEntry(name: $0.name, type: $0.what) }
        for (files, journal) in census.running {
            // No file: a capture at its start (before its data is made) or one that ended since
            // the census, granted nothing. Any other failure is thrown: a grant that cannot be
            // read is unknown, not 0.
            let facts = try FileSystem.isPresent(files.data) ? try FileSystem.facts(files.data) : nil
            allocated += facts.map { Int64($0.allocatedBytes) } ?? 0
            let progress = CaptureJournal.snapshot(commit: files.commit, progress: files.progress)
            captures.append(PoolStatus.Capture(
                id: files.id, destination: journal.destination, engine: journal.engine,
                bytesWritten: progress.written, committedBytes: progress.committed,
                grantedBytes: facts.map { Int64($0.size) } ?? 0, bitrate: journal.bitrate, pid: journal.pid,
                admittedOverBandwidth: journal.admittedOverBandwidth ?? false, counters: progress.counters,
                progressUnknown: progress.unknown))
        }
        // A capture whose progress cannot be read makes the figure a floor, said beside it: a
        // status (and a scrape) that failed for it showed nothing at all.
        let (remaining, unknown) = try lock.withReserveSize { try lock.withReserve { try capacityAccount(reserveFile).remainingFloor } }
        let current = try PoolConfiguration.load(layout.configuration)
        let storage = current.storage
        let admitted = captures.map(\.bitrate).saturatingSum()
        let landing = try landings()
        let schedulers = ioSchedulers
        return PoolStatus(
            path: path, initialCapacity: current.initialCapacity, remainingCapacity: remaining,
            busyReasons: try busyReasons, readOnly: isReadOnly, filesystem: storage.filesystem,
            directIOAlignment: storage.directIOAlignment, device: storage.device,
            reservedBytesOnDisk: allocated, zeroFilled: current.zeroFilled,
            engine: captures.first.flatMap { $0.engine.isEmpty ? nil : $0.engine } ?? WriteEngineFactory.availableEngineName(),
            recordingSecondsRemaining: admitted > 0 ? Double(remaining) * 8 / Double(admitted) : nil,
            maxCaptures: current.captureLimit, bandwidth: current.bandwidth,
            admissibleBitrate: current.bandwidth.map { Int64(Double($0) * CaptureAdmission.admissibleShare) },
            admittedBitrate: admitted, captures: captures, landing: landing,
            landingBytes: landing.map(\.length).saturatingSum(),
            landingWaitsForFleetSlot: try lock.othersWaitForFleetSlot() ? true : nil,
            ioSchedulers: schedulers.isEmpty ? nil : schedulers,
            undecided: census.undecided.isEmpty ? nil : census.undecided,
            strayEntries: stray.isEmpty ? nil : stray,
            remainingCapacityIsAtLeast: unknown.isEmpty ? nil : unknown.map { $0.message },
            grants: exchange.method, grantsNote: exchange.note,
            onlineDiscard: OnlineDiscard.of(path, grantsByExchange: exchange.isOn))
    }

    // MARK: Internals

    /// The pool's capacity as its files and the claims hold it now (`CapacityAccount`), against
    /// the `initialCapacity` recorded in `pool.json` now (another process may have resized the
    /// pool: the copy read at open is no proof). Call with the reserve lock held.
    /// - Throws: `pool.json`'s read error (`.corruptState`, `.ioError`): the capacity is then
    ///   unknown; the captures' and the claims' read errors.
    func capacityAccount(_ reserveFile: Reserve) throws -> CapacityAccount {
        let capacity = try PoolConfiguration.load(layout.configuration).initialCapacity
        // Running and kept alike: a kept capture's grant is held until recovery gives it back,
        // and only a running one can still write into it.
        let captures = try layout.captureFiles()
        return try CapacityAccount.read(reserve: reserveFile, claims: lock.claims.all(calls),
                                        captures: captures.map {
                                            ($0.data, $0.progress, CaptureClaim.liveness($0, calls) == .alive)
                                        }, initialCapacity: capacity)
    }

    func reserve(_ file: String) -> Reserve {
        let storage = configuration.storage
        return Reserve(path: file, calls: calls, access: access, unit: Int64(max(storage.directIOAlignment.io, storage.blockSize)),
                       blockSize: Int64(storage.blockSize), isBtrfs: storage.isBtrfs, exchange: exchange)
    }

    func busyError(_ busy: BusyReasons, action: String) -> ProVideoError {
        ProVideoError(.busy, "cannot \(action): the pool is busy (\(busy)); wait for it to finish and try again",
                      path: path)
    }

    /// Runs `body` holding `reason`, after checking under the mutation lock that nothing else
    /// is running (but captures, when `besideCaptures`): of two processes that start at once,
    /// exactly one gets in.
    func whileBusy<T>(_ reason: BusyReasons, action: String, besideCaptures: Bool = false,
                      _ body: () throws -> T) throws -> T {
        let holder = try PoolLock(path: layout.lock, access: access)
        try lock.withMutation {
            let busy = try lock.heldByOthers().subtracting(besideCaptures ? .capturing : [])
            guard busy.isEmpty, try holder.tryHold(reason) else { throw busyError(busy.isEmpty ? reason : busy, action: action) }
            do {
                // Dead captures (ones `open` could not repair) are salvaged before the reserve changes.
                try salvageDeadCaptures(control: .none)
                configuration = try PoolConfiguration.load(layout.configuration)
            } catch {
                holder.release(reason)
                throw error
            }
        }
        defer { holder.release(reason) }
        return try body()
    }

    /// Repairs what a killed process left: salvages each capture whose owner is gone (running
    /// captures are left alone), discards a half-built reserve, frees blocks a killed grow left
    /// past the reserve's end, cuts a reserve that a power cut left larger than
    /// `initialCapacity` less the captures' grants.
    /// - Parameter waitingForTheLock: wait for a mutation in progress (`.busy` after
    ///   `PoolLock.mutationWaitLimit`) instead of leaving the repair to the next open.
    func repair(control: OperationControl, waitingForTheLock: Bool = false) throws {
        func repairing() throws {
            salvaged += try salvageDeadCaptures(control: control)
            guard try lock.heldByOthers().subtracting(.capturing).isEmpty else { return }
            try lock.withReserveSize { try lock.withReserve { try repairReserve() } }
        }
        if waitingForTheLock { return try lock.withMutation(repairing) }
        // Opening does not wait for a process that is changing the pool (a long move, a
        // zero-filling create): the next open repairs instead.
        _ = try lock.withMutationIfFree(repairing)
    }

    private func repairReserve() throws {
        try FileSystem.remove(layout.newReserve)
        // A power cut between writing pool.json.tmp and renaming it leaves the temporary;
        // only pool.json counts, and no one else is writing it (no lock is held).
        try FileSystem.remove(layout.configuration + ".tmp")
        try finishKilledMoves()
        let reserveFile = reserve(layout.reserve)
        try reserveFile.trimPastEnd()
        // A grant whose reserve cut a power cut lost, or a grow recorded in pool.json whose
        // fallocate a power cut kept while a later shrink's record was lost.
        configuration = try PoolConfiguration.load(layout.configuration)
        // Captures running in other processes may have grants in flight: their bytes the
        // reserve still holds stay for their cuts.
        let account = try capacityAccount(reserveFile)
        let excess: Int64
        do {
            excess = try account.excess
        } catch let error as ProVideoError where error.code == .corruptState {
            // A grant that cannot be counted leaves the excess unknown: nothing is cut on a
            // guess (`check` names the capture).
            excess = 0
        }
        if excess > 0 {
            try reserveFile.open(nocow: false).truncate(account.reserve - excess, calls)
        }
        access.spare?.refill(to: reserveFile.headroom(reaching: configuration.initialCapacity), calls, access: access)
    }
}

/// A dead recorder's capture that had committed nothing: it was discarded, no file was made.
public struct DiscardedCapture: Codable, Sendable, Equatable {
    /// Where the recording was to go.
    public var destination: String
    /// Bytes the recorder had written, none of them durable; nil when its progress block
    /// could not be read.
    public var bytesWritten: Int64?
}

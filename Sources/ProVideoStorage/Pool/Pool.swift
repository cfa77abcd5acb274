import CProVideo
import Foundation
import Glibc
import Synchronization

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
    package private(set) var repairFailure: ProVideoError? {
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

    private init(path: String, configuration: PoolConfiguration, calls: SystemCalls) throws {
        self.path = path
        self.layout = PoolLayout(directory: path)
        self.access = try PoolAccess.of(directory: path)
        self.lock = try PoolLock(path: layout.lock, access: access)
        self.calls = calls
        self.state = Mutex(PoolState(configuration: configuration))
    }

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

    // MARK: Create, open, destroy

    /// Creates a pool in `path` (created if missing; its parent must exist) with a reserve of
    /// `capacity` bytes, rounded up to the allocation unit.
    /// - Parameters:
    ///   - path: the pool's directory.
    ///   - capacity: the reserve's size in bytes.
    ///   - zeroFill: also write the reserve once with zeros, so captures overwrite written
    ///     extents instead of converting unwritten ones.
    ///   - group: the group whose members may use the pool (record, status, resize…): a name or
    ///     a number. nil: this process's group. The pool directory becomes `user:group` with
    ///     mode 2770 and every pool file group read/write (see `PoolAccess`).
    ///   - maxCaptures: how many captures may run at once; nil (the default) for no limit; 1
    ///     keeps Apple's semantics (a second capture fails with `.busy`, `capturing`).
    ///   - bandwidth: the durable write bandwidth captures are admitted against, in bits per
    ///     second; nil: measured (below), or no admission.
    ///   - measuringBandwidth: when no `bandwidth` is given, measure the pool's durable write
    ///     bandwidth once it is made and admit captures against it, as `provideo create` does
    ///     (`measureBandwidth`: 20 s to 2 minutes of writes over the reserve, at most 16 times its
    ///     size; a reserve under 4 MiB is not measured and admits every capture). false: no
    ///     admission, as before 1.1 (`setBandwidth`, `provideo set-bandwidth` sets one later).
    ///   - progress: called with (bytes done, bytes total) while zero-filling.
    /// - Throws: `.poolExists`, `.unsupported` (with the reason), `.invalidArgument` for a
    ///   capacity ≤ 0 or above `maximumCapacity`, a path that is not a directory or an unknown group,
    ///   a path under a mount point of /etc/fstab whose filesystem is not mounted (the pool would
    ///   take the filesystem beneath: the root filesystem, as a rule), `.permissionDenied` when this user may not give the pool that group (not a member),
    ///   `.notEnoughSpace` (the capacity and the pool's own files must fit), `.ioError`; a
    ///   measurement's `.ioError` after the pool was made (the pool is there, without a
    ///   bandwidth: open it and measure again, or set one).
    public static func create(at path: String, capacity: Int64, zeroFill: Bool = false, group: String? = nil,
                              maxCaptures: Int? = nil, bandwidth: Int64? = nil, measuringBandwidth: Bool = true,
                              progress: ((Int64, Int64) -> Void)? = nil) throws -> Pool {
        let pool = try create(at: path, capacity: capacity, zeroFill: zeroFill, group: group, maxCaptures: maxCaptures,
                              bandwidth: bandwidth, progress: progress, systemCalls: .live)
        if bandwidth == nil && measuringBandwidth { _ = try pool.measureAndRecordBandwidth() }
        return pool
    }

    /// `create(at:capacity:zeroFill:group:progress:)` with system calls a test swapped, a
    /// control that may stop the zero-fill, the fstab to read (`fstab`, a test's own) and
    /// whether to create the pool under a mount point whose filesystem is not mounted
    /// (`provideo create --force`).
    package static func create(at path: String, capacity: Int64, zeroFill: Bool = false, group: String? = nil,
                               maxCaptures: Int? = nil, bandwidth: Int64? = nil,
                               progress: ((Int64, Int64) -> Void)? = nil, control: OperationControl = .none,
                               fstab: String = FstabEntry.systemTable, onUnmountedFilesystem: Bool = false,
                               systemCalls: SystemCalls) throws -> Pool {
        guard !path.isEmpty else { throw ProVideoError(.invalidArgument, "the pool path is empty") }
        let path = FileSystem.absolute(path)
        try requireValidCapacity(capacity)
        if let maxCaptures, maxCaptures < 1 {
            throw ProVideoError(.invalidArgument, "a pool must take at least 1 capture at a time, not \(maxCaptures)")
        }
        if let bandwidth, bandwidth < 1 {
            throw ProVideoError(.invalidArgument, "the bandwidth must be more than 0 bit/s, not \(bandwidth)")
        }
        if FileSystem.exists(path) && !FileSystem.isDirectory(path) {
            throw ProVideoError(.invalidArgument, "\(path) exists and is not a directory", path: path)
        }
        let layout = PoolLayout(directory: path)
        if FileSystem.exists(path) { try PoolAccess.requireAccess(to: path) }
        if FileSystem.exists(layout.configuration) {
            throw ProVideoError(.poolExists, "a pool already exists at \(path); use `provideo resize` to change "
                                + "its capacity or `provideo destroy` first", path: path)
        }
        if !onUnmountedFilesystem, let entry = FstabEntry.unmounted(holding: path, table: fstab) {
            throw ProVideoError(.invalidArgument, "cannot create a pool at \(path): \(entry.notMounted(path, table: fstab)); "
                                + "mount it (`mount \(entry.mountPoint)`) and create the pool again, or pass --force to "
                                + "create it on the filesystem beneath", path: path)
        }
        let parent = FileSystem.parent(of: path)
        guard FileSystem.isDirectory(parent) else {
            let problem = FileSystem.exists(parent) ? "\(parent) is a file, not a directory" : "\(parent) does not exist"
            throw ProVideoError(.invalidArgument, "cannot create a pool at \(path): \(problem)", path: path)
        }
        let groupID = try group.map { name in
            guard let id = ProcessIdentity.groupID(named: name) else {
                throw ProVideoError(.invalidArgument, "there is no group \(name); create it with `groupadd \(name)` "
                                    + "or name an existing one", path: path)
            }
            guard ProcessIdentity.isRoot || ProcessIdentity.isMember(of: id) else {
                throw ProVideoError(.permissionDenied, "you are not a member of group \(name), so you cannot give it "
                                    + "the pool; create the pool as root or join the group first", path: path)
            }
            return id
        } ?? ProcessIdentity.group
        // Probe the pool directory itself: it is often a mount point of its own disk.
        let createdDirectory = !FileSystem.exists(path)
        try FileSystem.makeDirectory(path)
        let storage: StorageFacts
        do {
            try PoolAccess(owner: ProcessIdentity.user, group: groupID)
                .apply(to: try FileDescriptor.open(path, O_RDONLY | O_DIRECTORY), directory: true)
            storage = try StorageFacts.read(path)
            if let reason = DirectIOProbe.reasonUnsupported(directory: path, facts: storage) {
                throw ProVideoError(.unsupported, "cannot create a pool at \(path): \(reason)", path: path)
            }
            if storage.isBtrfs {
                // Files created in the directory inherit NOCOW, so the reserve is NOCOW from birth.
                let directory = try FileDescriptor.open(path, O_RDONLY | O_DIRECTORY)
                let rc = directory.setNoCOW()
                if rc < 0 { throw ProVideoError.system("ioctl(FS_IOC_SETFLAGS, FS_NOCOW_FL)", errno: -rc, path: path) }
            }
        } catch {
            if createdDirectory { try? FileSystem.removeDirectory(path) }
            throw error
        }
        let configuration = PoolConfiguration(format: PoolConfiguration.currentFormat, initialCapacity: 0,
                                              storage: storage, zeroFilled: zeroFill, maxCaptures: maxCaptures,
                                              bandwidth: bandwidth)
        let pool = try Pool(path: path, configuration: configuration, calls: systemCalls)
        do {
            try pool.allocateFirstReserve(capacity: capacity, zeroFill: zeroFill, control: control, progress: progress)
        } catch {
            // Nothing of a pool that was never created stays behind (unless another process
            // created it meanwhile: its files are not ours).
            guard (error as? ProVideoError)?.code != .poolExists else { throw error }
            for file in [layout.newReserve, layout.reserve, layout.configuration + ".tmp", layout.spare, layout.lock] {
                try? FileSystem.remove(file)
            }
            if createdDirectory { try? FileSystem.removeDirectory(path) }
            throw error
        }
        return pool
    }

    private func allocateFirstReserve(capacity: Int64, zeroFill: Bool, control: OperationControl,
                                      progress: ((Int64, Int64) -> Void)?) throws {
        let storage = configuration.storage
        try lock.withMutation {
            // Another process may have won the race, or a killed create left files behind: only
            // pool.json marks a pool, so anything else here without it is ours to discard.
            if FileSystem.exists(layout.configuration) {
                throw ProVideoError(.poolExists, "a pool already exists at \(path)", path: path)
            }
            for file in [layout.reserve, layout.newReserve, layout.configuration + ".tmp"] { try FileSystem.remove(file) }
            let reserve = reserve(layout.newReserve)
            let size = reserve.rounded(capacity)
            let fd = try reserve.open(create: true, nocow: storage.isBtrfs)
            try reserve.grow(fd, from: 0, to: size)
            CrashPoint.hit("create.allocated")
            if zeroFill {
                try reserve.zeroFill(from: 0, to: size, alignment: storage.directIOAlignment.io, control: control,
                                     progress: progress)
            }
            try FileSystem.rename(layout.newReserve, layout.reserve)
            access.spare?.refill(to: reserve.headroom(reaching: size), calls, access: access)
            configuration.initialCapacity = size
            try configuration.save(layout.configuration, calls, access: access)
        }
    }

    /// Opens the pool at `path` (see `resolvePath(_:environment:)`), then repairs what a killed
    /// process left behind.
    /// - Throws: `.poolNotFound` (with the command that creates one; under a mount point of
    ///   /etc/fstab whose filesystem is not mounted, saying so), `.invalidArgument` when the
    ///   path is a file, `.corruptState` for an unreadable or newer `pool.json`,
    ///   `.permissionDenied` for a user outside the pool's group (the message names it). A
    ///   repair that finds no space or inode does not fail the open: see `repairFailure`.
    ///
    /// `salvaging: false` opens the pool to look at it: nothing is repaired and no recording is
    /// moved (what `status`, `list`, `metrics` and `check` do, so that a root monitoring job
    /// never places takes: Docs/SECURITY.md); `deadCaptures()` lists what is left to salvage.
    public static func open(at path: String? = nil, salvaging: Bool = true) throws -> Pool {
        try open(at: path, systemCalls: .live, salvaging: salvaging)
    }

    /// `open(at:)` with system calls a test swapped; `control` gets the progress of a salvaged
    /// take's copy to another filesystem. `waitingForTheLock`: a recovery asked for (`provideo
    /// recover`, `Pool.salvage(at:)`) waits for a mutation in progress (up to
    /// `PoolLock.mutationWaitLimit`) rather than skip the salvage: an open that skipped it
    /// salvaged nothing, and "nothing to recover" would then be untrue.
    /// - Throws: as `open(at:)`; `.busy` when `waitingForTheLock` and the mutation lock stayed
    ///   taken.
    package static func open(at path: String?, systemCalls: SystemCalls, salvaging: Bool = true,
                             waitingForTheLock: Bool = false, control: OperationControl = .none,
                             fstab: String = FstabEntry.systemTable) throws -> Pool {
        if path?.isEmpty == true { throw ProVideoError(.invalidArgument, "the pool path is empty") }
        let path = resolvePath(path)
        if FileSystem.exists(path) && !FileSystem.isDirectory(path) {
            throw ProVideoError(.invalidArgument, "\(path) is a file, not a pool directory", path: path)
        }
        let layout = PoolLayout(directory: path)
        try PoolAccess.requireAccess(to: path)
        guard FileSystem.exists(layout.configuration) else {
            if let entry = FstabEntry.unmounted(holding: path, table: fstab) {
                throw ProVideoError(.poolNotFound, "no pool at \(path): \(entry.notMounted(path, table: fstab)); mount it "
                                    + "(`mount \(entry.mountPoint)`) to see the pool on it", path: path)
            }
            throw ProVideoError(.poolNotFound, "no pool at \(path); create one with "
                                + "`provideo --pool \(path) create --capacity 64G`", path: path)
        }
        let pool = try Pool(path: path, configuration: try PoolConfiguration.load(layout.configuration),
                            calls: systemCalls)
        guard salvaging else { return pool }
        do {
            try pool.repair(control: control, waitingForTheLock: waitingForTheLock)
        } catch let error as ProVideoError where error.code == .notEnoughSpace {
            pool.repairFailure = error
        }
        return pool
    }

    /// Removes the pool and its reserve, and its directory unless /etc/fstab names it as a mount
    /// point (the administrator's, mounted or not).
    /// - Throws: `.busy` naming the reasons; `.invalidArgument` while the pool still holds
    ///   recordings (they are never deleted by destroy); `.permissionDenied` for anyone but the
    ///   pool's owner and root.
    public func destroy() throws { try destroy(fstab: FstabEntry.systemTable) }

    /// `destroy()` reading the fstab at `fstab` (a test's own).
    package func destroy(fstab: String) throws {
        guard ProcessIdentity.isRoot || ProcessIdentity.user == access.owner else {
            throw ProVideoError(.permissionDenied, "only the pool's owner (\(ProcessIdentity.userName(access.owner))) or "
                                + "root may destroy the pool at \(path); its group may use it but not remove it", path: path)
        }
        try lock.withMutation {
            let busy = try lock.heldByOthers()
            guard busy.isEmpty else { throw busyError(busy, action: "destroy the pool") }
            let held = try listing().recordings
            guard held.isEmpty else {
                throw ProVideoError(.invalidArgument, "the pool still holds \(held.count) recording(s) in "
                                    + "\(layout.recordings); move them out with `provideo move`, then destroy the pool",
                                    path: path)
            }
            try salvageDeadCaptures(control: .none)
            // The reserve goes first: killed here, the pool is still valid, with no capacity,
            // and destroy can simply run again.
            for file in [layout.reserve, layout.newReserve, layout.recoveredLog, layout.spare] { try FileSystem.remove(file) }
            try FileSystem.syncDirectory(path, calls)
            CrashPoint.hit("destroy.reserveRemoved")
            try FileSystem.remove(layout.configuration)
            CrashPoint.hit("destroy.configurationRemoved")
            try FileSystem.remove(layout.configuration + ".tmp")
            try FileSystem.removeDirectory(layout.recordings)
            try FileSystem.removeDirectory(layout.captures)
        }
        try FileSystem.remove(layout.lock)
        if !FstabEntry.isMountPoint(path, table: fstab) { try? FileSystem.removeDirectory(path) }
    }

    /// Finishes a destroy that was killed after it removed `pool.json`, or clears what a failed
    /// create left: removes what only a pool leaves (`pool.lock`, `pool.json.tmp`, `reserve`,
    /// `reserve.new`, an empty `recordings/`) and the directory, unless it is a mount point of
    /// the fstab at `fstab`. Anything else in the directory is left alone.
    /// - Returns: false when `path` holds no such remains (then it is not a pool at all).
    /// - Throws: `.ioError` when a remain cannot be removed.
    package static func removeRemains(at path: String, fstab: String = FstabEntry.systemTable) throws -> Bool {
        let layout = PoolLayout(directory: resolvePath(path))
        guard !FileSystem.exists(layout.configuration), FileSystem.exists(layout.lock) else { return false }
        for file in [layout.lock, layout.configuration + ".tmp", layout.reserve, layout.newReserve, layout.spare] {
            try FileSystem.remove(file)
        }
        try? FileSystem.removeDirectory(layout.recordings)
        try? FileSystem.removeDirectory(layout.captures)
        if !FstabEntry.isMountPoint(layout.directory, table: fstab) { try? FileSystem.removeDirectory(layout.directory) }
        return true
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
    /// `admissibleShare` of it. Read as `initialCapacity` is, and throws as it does.
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
        let census = try captureCensus()
        for (files, journal) in census.running {
            // No file: a capture at its start (before its data is made) or one that ended since
            // the census, granted nothing. Any other failure is thrown: a grant that cannot be
            // read is unknown, not 0.
            let facts = try FileSystem.isPresent(files.data) ? try FileSystem.facts(files.data) : nil
            allocated += facts.map { Int64($0.allocated_bytes) } ?? 0
            let progress = CaptureJournal.snapshot(commit: files.commit, progress: files.progress)
            captures.append(PoolStatus.Capture(
                id: files.id, destination: journal.destination, engine: journal.engine,
                bytesWritten: progress.written, committedBytes: progress.committed,
                grantedBytes: facts.map { Int64($0.size) } ?? 0, bitrate: journal.bitrate, pid: journal.pid,
                admittedOverBandwidth: journal.admittedOverBandwidth ?? false, counters: progress.counters))
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
            admissibleBitrate: current.bandwidth.map { Int64(Double($0) * Self.admissibleShare) },
            admittedBitrate: admitted, captures: captures, landing: landing,
            landingBytes: landing.map(\.length).saturatingSum(),
            ioSchedulers: schedulers.isEmpty ? nil : schedulers,
            undecided: census.undecided.isEmpty ? nil : census.undecided,
            remainingCapacityIsAtLeast: unknown.isEmpty ? nil : unknown.map { $0.message })
    }

    // MARK: Resize and replenish

    /// Sets `initialCapacity` to `capacity` bytes (rounded up to the allocation unit) and
    /// grows or shrinks the reserve to it. Busy reason `adjustingCapacity` while it runs;
    /// refused while a capture runs (a capture cannot start while it runs).
    /// - Returns: the new capacity in bytes.
    /// - Throws: `.busy`; `.notEnoughSpace` with the missing bytes, the reserve left exactly as
    ///   it was; `.invalidArgument` for a capacity ≤ 0 or above `maximumCapacity`.
    @discardableResult
    public func resize(to capacity: Int64) throws -> Int64 {
        try Self.requireValidCapacity(capacity)
        return try whileBusy(.adjustingCapacity, action: "resize the pool") { try lock.withReserveSize {
            let reserve = reserve(layout.reserve)
            let target = reserve.rounded(capacity)
            let current = try reserve.size()
            let previous = configuration
            let fd = try reserve.open(create: true, nocow: configuration.storage.isBtrfs)
            if target < current {
                // A shrink frees the space first, so it works on a full filesystem (recording the
                // capacity needs a block); killed before the record, the reserve is smaller than
                // the capacity, which is normal (`replenish` grows it).
                try fd.truncate(target, calls)
                try fd.sync(calls)
            } else if target > current {
                try reserve.requireSpace(target - current, reaching: target)
            }
            // A grow records the capacity first: killed afterwards, the reserve is either still
            // the old size or already the new one, and `repair(control:)` cuts a reserve larger than
            // the capacity.
            configuration.initialCapacity = target
            do {
                try configuration.save(layout.configuration, calls, access: access)
                if target > current { try reserve.grow(fd, from: current, to: target) }
            } catch {
                configuration = previous
                throw Rollback.keepingFirst(error, restoring: "the recorded capacity (\(previous.initialCapacity) bytes, "
                                            + "in \(layout.configuration))") {
                    try configuration.save(layout.configuration, calls, access: access)
                }
            }
            CrashPoint.hit("resize.allocated")
            return target
        } }
    }

    /// Restores the reserve toward `initialCapacity` from the filesystem's free space, best
    /// effort: it may add less than was missing, and the result says so. Busy reason
    /// `replenishing` while it runs. It runs beside running captures and never takes what they
    /// were granted: the reserve grows to `initialCapacity` less their grants.
    /// - Throws: `.notEnoughSpace` when it could add nothing; `.busy` (a resize or another
    ///   replenish is running).
    @discardableResult
    public func replenish() throws -> ReplenishResult {
        try whileBusy(.replenishing, action: "replenish the pool", besideCaptures: true) {
            let (added, missing) = try lock.withReserveSize {
                let reserve = reserve(layout.reserve)
                let wanted = try lock.withReserve { try capacityAccount(reserve).missing }
                let added = try refill(reserve, by: wanted)
                return (added, max(wanted - added, 0))
            }
            CrashPoint.hit("replenish.allocated")
            return ReplenishResult(added: added, missing: missing, remainingCapacity: try remainingCapacity)
        }
    }

    /// Grows `reserve` by up to `wanted` bytes: all of it if it fits, else what the filesystem's
    /// free space allows, trying smaller amounts a bounded number of times (each failed try is
    /// rolled back exactly, so retries never eat the disk).
    /// - Returns: the bytes added.
    func refill(_ reserve: Reserve, by wanted: Int64) throws -> Int64 {
        guard wanted > 0 else { return 0 }
        let fd = try reserve.open(create: true, nocow: configuration.storage.isBtrfs)
        let start = try reserve.size()
        var attempt = reserve.rounded(wanted)
        var lastError: ProVideoError?
        for _ in 0..<8 where attempt > 0 {
            do {
                try reserve.grow(fd, from: start, to: start + attempt)
                return attempt
            } catch let error as ProVideoError where error.code == .notEnoughSpace {
                lastError = error
                // What the filesystem says it can take, else half (the report can be optimistic:
                // btrfs metadata), never more than the last try.
                let usable = try reserve.usableBytes(reaching: start + attempt)
                attempt = (usable < attempt ? usable : attempt / 2) / reserve.unit * reserve.unit
            }
        }
        throw ProVideoError(.notEnoughSpace, "the filesystem has no space to add to the reserve "
                            + "(\(lastError?.message ?? "nothing free")); free some space and run "
                            + "`provideo replenish` again", errno: ENOSPC, path: path)
    }

    // MARK: Internals

    /// The pool's capacity as its files and the claims hold it now (`CapacityAccount`), against
    /// the `initialCapacity` recorded in `pool.json` now (another process may have resized the
    /// pool: the copy read at open is no proof). Call with the reserve lock held.
    /// - Throws: `pool.json`'s read error (`.corruptState`, `.ioError`): the capacity is then
    ///   unknown; the captures' and the claims' read errors.
    func capacityAccount(_ reserveFile: Reserve) throws -> CapacityAccount {
        let capacity = try PoolConfiguration.load(layout.configuration).initialCapacity
        // An entry of captures/ that is not a directory (a stray file or link) holds no capture's
        // file; one that went meanwhile has finished.
        let captures = try captureFiles().filter { files in
            do {
                return try FileSystem.facts(files.directory).mode & UInt32(S_IFMT) == UInt32(S_IFDIR)
            } catch let error as ProVideoError where error.errno == ENOENT {
                return false
            }
        }
        return try CapacityAccount.read(reserve: reserveFile, claims: lock.claims.all(calls),
                                        captures: captures.map { ($0.data, $0.progress) }, initialCapacity: capacity)
    }

    func reserve(_ file: String) -> Reserve {
        let storage = configuration.storage
        return Reserve(path: file, calls: calls, access: access, unit: Int64(max(storage.directIOAlignment.io, storage.blockSize)),
                       blockSize: Int64(storage.blockSize), isBtrfs: storage.isBtrfs)
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
        if account.excess > 0 {
            try reserveFile.open(nocow: false).truncate(account.reserve - account.excess, calls)
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

/// The outcome of `Pool.replenish()`, in bytes.
public struct ReplenishResult: Codable, Sendable, Equatable {
    /// Bytes added to the reserve.
    public var added: Int64
    /// Bytes still missing to reach `initialCapacity` (0 when fully restored).
    public var missing: Int64
    /// The pool's remaining capacity afterwards.
    public var remainingCapacity: Int64
}

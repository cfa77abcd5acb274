import FoundationEssentials
import Glibc
import ProVideoSystem

/// A pool's creation, opening and removal.
extension Pool {
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
            throw ProVideoError(.poolExists, "a pool already exists at \(path)", path: path,
                                remedies: [.resize, .destroy])
        }
        if !onUnmountedFilesystem, let entry = FstabEntry.unmounted(holding: path, table: fstab) {
            throw ProVideoError(.invalidArgument, "cannot create a pool at \(path): \(entry.notMounted(path, table: fstab)); "
                                + "mount it (`mount \(entry.mountPoint)`) and create the pool again, or create it on the "
                                + "filesystem beneath", path: path, remedies: [.createOnUnmountedFilesystem])
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
            throw ProVideoError(.poolNotFound, "no pool at \(path)", path: path, remedies: [.create])
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
                                    + "\(layout.recordings); move them out, then destroy the pool",
                                    path: path, remedies: [.list])
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
}

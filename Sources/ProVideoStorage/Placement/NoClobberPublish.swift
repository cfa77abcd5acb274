import Glibc
import Synchronization
import ProVideoSystem

/// Gives a finished, flushed, verified file its final name without ever replacing a file
/// already there, on every filesystem, with the first of three ways the filesystem supports:
///
/// 1. renameat2(2) `RENAME_NOREPLACE` of the temporary name: atomic; ext4, XFS, btrfs, tmpfs.
/// 2. link(2) of the open file itself (`/proc/self/fd/N`) to the final name (fails with
///    `EEXIST` when it is taken), then unlink(2) of the temporary name if it still is that
///    file: GlusterFS and other FUSE filesystems without rename2, NFS. Killed between the two,
///    both names are the same file; the next landing removes the temporary.
/// 3. An exclusive create (`O_CREAT|O_EXCL`) of the final name, then rename(2) of the
///    temporary over that empty file this process owns: filesystems with neither (SMB without
///    POSIX extensions, some FUSE filesystems). An empty file is visible under the final name
///    for the time of one rename.
///
/// Whatever the way, the final name is then checked to be the verified file itself (device and
/// inode, not followed): a temporary name someone swapped for a link or another file while it
/// was published is never taken for the recording (Docs/SECURITY.md).
///
/// Which way works is learnt once per filesystem (by device number) from the first publish
/// there: a way the filesystem refuses (`EINVAL`, `ENOSYS`, `EOPNOTSUPP`, `ENOTSUP`, `EPERM`
/// for link on filesystems without hard links) is not tried there again by this process.
struct NoClobberPublish {
    enum Method: String, Codable, Sendable, CaseIterable {
        case renameNoReplace, linkThenUnlink, exclusivePlaceholder
    }

    let calls: SystemCalls
    /// What was learnt about each filesystem: the process's own, or a test's.
    let learnt: Learnt

    package init(calls: SystemCalls, learnt: Learnt = .shared) {
        self.calls = calls
        self.learnt = learnt
    }

    /// The way that worked on each filesystem (`st_dev`).
    final class Learnt: Sendable {
        package static let shared = Learnt()
        fileprivate let methods = Mutex<[UInt64: Method]>([:])
        package init() {}
    }

    /// Publishes `file`, which is `temporary` in `directory`, as `name` there, and flushes the
    /// directory.
    /// - Returns: the way it was published.
    /// - Throws: `.destinationExists` (errno EEXIST; the temporary is left as it was);
    ///   `.ioError` when the final name turns out not to be `file` (the temporary was replaced
    ///   meanwhile: what is there is left alone); the error of the last way tried when none
    ///   works (man 2 rename, link, open).
    @discardableResult
    func publish(_ file: FileDescriptor, from temporary: String, as name: String, in directory: DirectoryHandle) throws -> Method {
        let verified = try file.facts()
        let device = UInt64(verified.deviceMajor) << 32 | UInt64(verified.deviceMinor)
        let start = learnt.methods.withLock { $0[device] } ?? .renameNoReplace
        var lastError: ProVideoError?
        for method in Method.allCases.drop(while: { $0 != start }) {
            let rc = attempt(method, file, verified, temporary, name, directory)
            if rc == 0 {
                learnt.methods.withLock { $0[device] = method }
                try directory.sync(calls)
                guard directory.holds(name, verified) else {
                    throw ProVideoError(.ioError, "\(directory.display(name)) is not the verified copy after it was "
                                        + "published: \(directory.display(temporary)) was replaced meanwhile; what is "
                                        + "there was left alone and the recording stays in the pool",
                                        path: directory.display(name))
                }
                return method
            }
            if rc == -EEXIST { throw RecordingMove.destinationExists(directory.display(name)) }
            lastError = ProVideoError.system(method.systemCall, errno: -rc, path: directory.display(name))
            guard Self.meansUnsupported(-rc, method) else { throw lastError! }
        }
        throw lastError!
    }

    /// One way; 0 or -errno.
    private func attempt(_ method: Method, _ file: FileDescriptor, _ verified: FileFacts, _ temporary: String,
                         _ name: String, _ directory: DirectoryHandle) -> Int32 {
        switch method {
        case .renameNoReplace:
            return calls.renameNoReplace(directory.path(of: temporary), directory.path(of: name))
        case .linkThenUnlink:
            let rc = calls.link("/proc/self/fd/\(file.rawValue)", directory.path(of: name))
            if rc != 0 { return rc }
            // The final name holds the verified file now; a temporary left by a kill here is
            // removed by the next landing, which finds the destination identical.
            if directory.holds(temporary, verified) { try? directory.remove(temporary) }
            return 0
        case .exclusivePlaceholder:
            do {
                _ = try directory.open(name, O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
            } catch let error as ProVideoError {
                return -(error.errno ?? EIO)
            } catch { return -EIO }
            let rc = directory.rename(temporary, to: name)
            // Never leave the empty placeholder as if it were the recording.
            if rc != 0 { try? directory.remove(name) }
            return rc
        }
    }

    private static func meansUnsupported(_ errno: Int32, _ method: Method) -> Bool {
        switch errno {
        case EINVAL, ENOSYS, EOPNOTSUPP, ENOTSUP: true
        case EPERM: method == .linkThenUnlink
        default: false
        }
    }
}

extension NoClobberPublish.Method {
    var systemCall: String {
        switch self {
        case .renameNoReplace: "renameat2"
        case .linkThenUnlink: "link"
        case .exclusivePlaceholder: "open(O_EXCL)"
        }
    }
}

import Glibc
import Synchronization

/// Gives a finished, flushed temporary file its final name without ever replacing a file
/// already there, on every filesystem, with the first of three ways the filesystem supports:
///
/// 1. renameat2(2) `RENAME_NOREPLACE`: atomic; ext4, XFS, btrfs, tmpfs.
/// 2. link(2) to the final name (fails with `EEXIST` when it is taken), then unlink(2) of the
///    temporary: GlusterFS and other FUSE filesystems without rename2, NFS. Killed between the
///    two, both names are the same file; the next landing removes the temporary.
/// 3. An exclusive create (`O_CREAT|O_EXCL`) of the final name, then rename(2) of the
///    temporary over that empty file this process owns: filesystems with neither (SMB without
///    POSIX extensions, some FUSE filesystems). An empty file is visible under the final name
///    for the time of one rename.
///
/// Which way works is learnt once per filesystem (by device number) from the first publish
/// there: a way the filesystem refuses (`EINVAL`, `ENOSYS`, `EOPNOTSUPP`, `ENOTSUP`, `EPERM`
/// for link on filesystems without hard links) is not tried there again by this process.
package struct NoClobberPublish {
    package enum Method: String, Codable, Sendable, CaseIterable {
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
    package final class Learnt: Sendable {
        package static let shared = Learnt()
        fileprivate let methods = Mutex<[UInt64: Method]>([:])
        package init() {}
    }

    /// Publishes `temporary` as `destination` (both in one directory) and flushes the directory.
    /// - Returns: the way it was published.
    /// - Throws: `.destinationExists` (errno EEXIST; the temporary is left as it was); the
    ///   error of the last way tried when none works (man 2 rename, link, open).
    @discardableResult
    package func publish(_ temporary: String, as destination: String) throws -> Method {
        let directory = FileSystem.parent(of: destination)
        let device = try Self.device(of: directory)
        let start = learnt.methods.withLock { $0[device] } ?? .renameNoReplace
        var lastError: ProVideoError?
        for method in Method.allCases.drop(while: { $0 != start }) {
            let rc = attempt(method, temporary, destination)
            if rc == 0 {
                learnt.methods.withLock { $0[device] = method }
                try FileSystem.syncDirectory(directory, calls)
                return method
            }
            if rc == -EEXIST { throw RecordingMove.destinationExists(destination) }
            lastError = ProVideoError.system(method.systemCall, errno: -rc, path: destination)
            guard Self.meansUnsupported(-rc, method) else { throw lastError! }
        }
        throw lastError!
    }

    /// One way; 0 or -errno.
    private func attempt(_ method: Method, _ temporary: String, _ destination: String) -> Int32 {
        switch method {
        case .renameNoReplace:
            return calls.renameNoReplace(temporary, destination)
        case .linkThenUnlink:
            let rc = calls.link(temporary, destination)
            if rc != 0 { return rc }
            // The final name holds the whole file now; a temporary left by a kill here is
            // removed by the next landing, which finds the destination identical.
            try? FileSystem.remove(temporary)
            return 0
        case .exclusivePlaceholder:
            do {
                _ = try FileDescriptor.open(destination, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: 0o600)
            } catch let error as ProVideoError {
                return -(error.errno ?? EIO)
            } catch { return -EIO }
            do {
                try FileSystem.rename(temporary, destination)
                return 0
            } catch let error as ProVideoError {
                // Never leave the empty placeholder as if it were the recording.
                try? FileSystem.remove(destination)
                return -(error.errno ?? EIO)
            } catch { return -EIO }
        }
    }

    private static func meansUnsupported(_ errno: Int32, _ method: Method) -> Bool {
        switch errno {
        case EINVAL, ENOSYS, EOPNOTSUPP, ENOTSUP: true
        case EPERM: method == .linkThenUnlink
        default: false
        }
    }

    private static func device(of directory: String) throws -> UInt64 {
        let facts = try FileSystem.facts(directory)
        return UInt64(facts.dev_major) << 32 | UInt64(facts.dev_minor)
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

import CProVideo
import Glibc
import Synchronization

/// The rule that no path inside a pool is resolved through a symbolic link (Docs/SECURITY.md,
/// "The pool's own files"). Pool-group members may write in the pool's directories, so any of
/// them could plant a link at `captures/<id>/data`, at `spare`, or swap a whole `captures/<id>`
/// for a link to `/etc`: a root service that followed it would truncate, grow, chmod or delete
/// a file outside the pool. Every path operation of `FileSystem` and `FileDescriptor` on a path
/// below a pool directory this process uses is therefore resolved from that directory with
/// openat2(2) `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV`: no component may be a
/// link, nothing may lead out of the pool or onto another mount, and a file opened for writing
/// must be a regular file with one link. One choke point, so no call site can forget it.
enum PoolConfinement {
    private static let directories = Mutex<Set<String>>([])

    /// Confines every later path operation below `directory` (absolute, as `PoolLayout` has it).
    static func register(_ directory: String) {
        guard directory != "/" else { return }
        directories.withLock { _ = $0.insert(directory) }
    }

    /// The pool directory `path` lies below and the rest of it, relative; nil for a path
    /// outside every pool (a destination, /proc, /sys).
    static func split(_ path: String) -> (root: String, relative: String)? {
        directories.withLock { roots in
            for root in roots where path.hasPrefix(root + "/") && path.count > root.count + 1 {
                return (root, String(path.dropFirst(root.count + 1)))
            }
            return nil
        }
    }

    /// openat2(2) of `relative` beneath `root`; fd or -errno.
    static func open(root: String, relative: String, flags: Int32, mode: mode_t) -> Int32 {
        let base = Glibc.open(root, pv_O_PATH | O_DIRECTORY | O_CLOEXEC)
        if base < 0 { return -Glibc.errno }
        defer { Glibc.close(base) }
        return pv_open_beneath(base, relative, flags, mode)
    }

    /// Runs `body` with a descriptor of `path`'s directory, opened beneath its pool, and its
    /// last component. For paths outside every pool, the directory is opened as usual.
    static func withParent<T>(of path: String, _ body: (_ directory: Int32, _ name: String) -> T) -> Result<T, ProVideoError> {
        let parent = FileSystem.parent(of: path), name = FileSystem.lastComponent(of: path)
        let flags = pv_O_PATH | O_DIRECTORY
        let fd: Int32
        if let (root, relative) = split(path) {
            fd = relative.contains("/") ? open(root: root, relative: FileSystem.parent(of: relative), flags: flags, mode: 0)
                                        : { let d = Glibc.open(root, flags | O_CLOEXEC); return d < 0 ? -Glibc.errno : d }()
        } else {
            let d = Glibc.open(parent, flags | O_CLOEXEC)
            fd = d < 0 ? -Glibc.errno : d
        }
        guard fd >= 0 else { return .failure(refusal("open", errno: -fd, path: parent)) }
        defer { Glibc.close(fd) }
        return .success(body(fd, name))
    }

    /// The error for a pool path that could not be resolved: a link or a mount on the way is
    /// the pool's state being wrong or hostile, said as such; any other errno as the call's.
    static func refusal(_ call: String, errno: Int32, path: String) -> ProVideoError {
        switch errno {
        case ELOOP, EXDEV:
            return ProVideoError(.corruptState, "\(path) in the pool is or passes through a symbolic link or another "
                                 + "mount; the pool's files are never followed out of it: remove the link (`ls -l` shows "
                                 + "it) and run the command again", errno: errno, path: path)
        default:
            return ProVideoError.system(call, errno: errno, path: path)
        }
    }
}

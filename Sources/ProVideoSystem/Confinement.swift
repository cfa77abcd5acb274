import CProVideo
import Glibc
import Synchronization

/// Confined directories: no path below one is resolved through a symbolic link or onto another
/// mount (Docs/SECURITY.md says whose directories these are and why:
/// others who may write in them could plant a link to `/etc` for a root service to follow).
/// Every path operation of `FileSystem` and `FileDescriptor` on a path below a registered
/// directory is resolved from that directory with openat2(2) `RESOLVE_BENEATH |
/// RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV`: no component may be a link, nothing may lead out of
/// it or onto another mount, and a file opened for writing must be a regular file with one
/// link. One choke point, so no call site can forget it.
package enum Confinement {
    /// Registered directories and what errors call them.
    private static let directories = Mutex<[String: String]>([:])

    /// Confines every later path operation below `directory` (absolute); `name` says what it
    /// is in error messages (the caller's word for it).
    package static func register(_ directory: String, as name: String) {
        guard directory != "/" else { return }
        directories.withLock { $0[directory] = name }
    }

    /// What the confined directory above `path` is called in errors ("a confined directory"
    /// when none is).
    package static func name(above path: String) -> String {
        guard let root = split(path)?.root else { return "a confined directory" }
        return directories.withLock { $0[root] } ?? "a confined directory"
    }

    /// The confined directory `path` lies below and the rest of it, relative; nil for a path
    /// outside every one (a destination, /proc, /sys).
    package static func split(_ path: String) -> (root: String, relative: String)? {
        directories.withLock { roots in
            for root in roots.keys where path.hasPrefix(root + "/") && path.count > root.count + 1 {
                return (root, String(path.dropFirst(root.count + 1)))
            }
            return nil
        }
    }

    /// openat2(2) of `relative` beneath `root`; fd or -errno.
    package static func open(root: String, relative: String, flags: Int32, mode: mode_t) -> Int32 {
        let base = Glibc.open(root, pv_O_PATH | O_DIRECTORY | O_CLOEXEC)
        if base < 0 { return -Glibc.errno }
        defer { Glibc.close(base) }
        return pv_open_beneath(base, relative, flags, mode)
    }

    /// Runs `body` with a descriptor of `path`'s directory, opened beneath its confined
    /// directory, and its last component. For other paths, the directory is opened as usual.
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

    /// The error for a confined path that could not be resolved: a link or a mount on the way
    /// is the state there being wrong or hostile, said as such; any other errno as the call's.
    package static func refusal(_ call: String, errno: Int32, path: String) -> ProVideoError {
        switch errno {
        case ELOOP, EXDEV:
            let name = name(above: path)
            return ProVideoError(.corruptState, "\(path) in \(name) is or passes through a symbolic link or another "
                                 + "mount; the files of \(name) are never followed out of it: remove the link (`ls -l` "
                                 + "shows it) and run the command again", errno: errno, path: path)
        default:
            return ProVideoError.system(call, errno: errno, path: path)
        }
    }
}

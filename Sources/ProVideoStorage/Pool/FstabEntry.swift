import ProVideoSystem

/// A filesystem that /etc/fstab mounts (fstab(5)): a pool meant for a disk of its own lives at or
/// below its mount point. When that filesystem is not mounted (the disk is missing, or mounting
/// failed at boot) the mount point is a plain directory of the filesystem beneath, the root
/// filesystem as a rule: a pool created there takes the system's space and captures write to
/// the wrong disk.
package struct FstabEntry: Sendable, Equatable {
    /// The first field: the device, `UUID=…`, `LABEL=…` or a network source.
    package var source: String
    /// The second field, without its octal escapes.
    package var mountPoint: String
    package var type: String

    /// The system's table.
    package static let systemTable = "/etc/fstab"

    /// The entries of an fstab text that mount a filesystem at a directory (swap and `none`
    /// entries left out), in the file's order.
    package static func entries(in text: String) -> [FstabEntry] {
        text.split(separator: "\n").compactMap { line in
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 3, !fields[0].hasPrefix("#"), fields[1].hasPrefix("/"), fields[2] != "swap" else {
                return nil
            }
            return FstabEntry(source: unescape(fields[0]), mountPoint: FileSystem.absolute(unescape(fields[1])),
                              type: String(fields[2]))
        }
    }

    /// The entries of the fstab at `table`; none when it cannot be read.
    package static func entries(inFile table: String) -> [FstabEntry] {
        guard let bytes = try? FileSystem.readSmallFile(table) else { return [] }
        return entries(in: String(decoding: bytes, as: UTF8.self))
    }

    /// The entry of `table` whose filesystem should hold `path` but is not mounted: the deepest
    /// one at or above `path` whose mount point lies below the mount that holds `path` now
    /// (/proc/self/mountinfo). nil when every such filesystem is mounted, or none is named.
    package static func unmounted(holding path: String, table: String = systemTable) -> FstabEntry? {
        let path = resolved(path)
        let entries = entries(inFile: table).filter { isAtOrAbove($0.mountPoint, path) }
        guard !entries.isEmpty else { return nil }
        let holding = mount(holding: path)?.mountPoint ?? "/"
        return entries.filter { $0.mountPoint.count > holding.count && isAtOrAbove(holding, $0.mountPoint) }
            .max { $0.mountPoint.count < $1.mountPoint.count }
    }

    /// The mount that holds `path` now: the deepest mount point at or above it (the last
    /// mounted, when several are stacked there).
    static func mount(holding path: String) -> MountInfo? {
        let path = resolved(path)
        return MountInfo.all().filter { isAtOrAbove($0.mountPoint, path) }
            .reduce(nil) { deepest, mount in mount.mountPoint.count >= (deepest?.mountPoint.count ?? 0) ? mount : deepest }
    }

    /// "…: /etc/fstab mounts /dev/sdb1 (ext4) at /srv/rec, which is not mounted: PATH is on the
    /// filesystem beneath (/dev/vda at /)", for the messages that refuse or explain.
    package func notMounted(_ path: String, table: String) -> String {
        let beneath = Self.mount(holding: path).map { " (\($0.source) at \($0.mountPoint))" } ?? ""
        return "\(table) mounts \(source) (\(type)) at \(mountPoint), which is not mounted: \(path) is on the "
            + "filesystem beneath\(beneath)"
    }

    /// Whether `directory` is the mount point of an entry of `table`, mounted or not: such a
    /// directory is the administrator's, never removed with a pool.
    static func isMountPoint(_ directory: String, table: String = systemTable) -> Bool {
        let directory = resolved(directory)
        return entries(inFile: table).contains { $0.mountPoint == directory }
    }

    /// `path` made absolute with its symbolic links resolved, as far as it exists (a pool's
    /// directory may not exist yet): mount points are compared as the kernel sees them.
    static func resolved(_ path: String) -> String {
        var existing = FileSystem.absolute(path)
        var rest: [String] = []
        while existing != "/" && !FileSystem.exists(existing) {
            rest.insert(FileSystem.lastComponent(of: existing), at: 0)
            existing = FileSystem.parent(of: existing)
        }
        let base = FileSystem.realPath(existing) ?? existing
        return rest.reduce(base) { $0 == "/" ? "/" + $1 : $0 + "/" + $1 }
    }

    /// Whether `mountPoint` is `path` or one of its ancestors, component by component.
    static func isAtOrAbove(_ mountPoint: String, _ path: String) -> Bool {
        mountPoint == "/" || path == mountPoint || path.hasPrefix(mountPoint + "/")
    }

    /// A field of fstab or mountinfo with its octal escapes (`\040` for a space, `\011` a tab,
    /// `\012` a newline, `\134` a backslash) turned back into characters.
    static func unescape(_ field: Substring) -> String {
        var bytes: [UInt8] = []
        var utf8 = Array(field.utf8)[...]
        while let byte = utf8.first {
            if byte == UInt8(ascii: "\\"), utf8.count >= 4,
               let value = UInt8(String(decoding: utf8.dropFirst().prefix(3), as: UTF8.self), radix: 8) {
                bytes.append(value)
                utf8 = utf8.dropFirst(4)
            } else {
                bytes.append(byte)
                utf8 = utf8.dropFirst()
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

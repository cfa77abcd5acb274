import Glibc

/// Bytes written to the block device a path lives on, from the kernel's per-device counters
/// (`/sys/dev/block/MAJOR:MINOR/stat`, field 7: sectors written, 512 bytes each, whatever the
/// device's sector size; Documentation/block/stat.rst). Everything written to the device
/// counts, a neighbour's writes included: a sizing trial watches the device itself settle.
package struct DeviceWrites: Sendable {
    private let statPath: String

    /// nil when the path is on no block device (tmpfs, a network or FUSE filesystem).
    package init?(path: String) {
        var facts = stat()
        guard stat(path, &facts) == 0 else { return nil }
        let major = (facts.st_dev >> 8) & 0xfff | (facts.st_dev >> 32) & ~0xfff
        let minor = facts.st_dev & 0xff | (facts.st_dev >> 12) & ~0xff
        guard major != 0 else { return nil }
        statPath = "/sys/dev/block/\(major):\(minor)/stat"
        guard bytes() != nil else { return nil }
    }

    /// Bytes written to the device since it appeared; nil if the counters cannot be read.
    package func bytes() -> Int64? {
        guard let file = fopen(statPath, "r") else { return nil }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 512)
        guard fgets(&line, Int32(line.count), file) != nil else { return nil }
        let fields = String(cString: line).split(separator: " ")
        guard fields.count > 6, let sectors = Int64(fields[6]), sectors >= 0, sectors < Int64.max / 512 else { return nil }
        return sectors * 512
    }
}

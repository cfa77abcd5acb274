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
        // glibc's gnu_dev_major and gnu_dev_minor (sys/sysmacros.h): 32-bit numbers.
        let device = UInt64(facts.st_dev)
        let major = UInt32(truncatingIfNeeded: (device & 0x0000_0000_000f_ff00) >> 8 | (device & 0xffff_f000_0000_0000) >> 32)
        let minor = UInt32(truncatingIfNeeded: (device & 0x0000_0000_0000_00ff) | (device & 0x0000_0fff_fff0_0000) >> 12)
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

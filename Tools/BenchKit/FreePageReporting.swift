import Foundation

/// Whether this machine is a virtual machine whose balloon device reports free pages to the
/// host (virtio-balloon's `VIRTIO_BALLOON_F_REPORTING`, feature bit 5; the Linux driver is
/// drivers/virtio/virtio_balloon.c, the kernel side mm/page_reporting.c). The host then
/// discards every freed 2 MiB block; while a neighbour frees gigabytes of page cache (the noisy
/// neighbour truncates its file), copies in unrelated threads stall for tens of milliseconds
/// (Docs/BENCHMARKS.md, "Copies stall while the host takes back free pages"). A physical
/// recorder has no balloon.
package enum FreePageReporting {
    static let driver = "/sys/bus/virtio/drivers/virtio_balloon"
    static let featureBit = 5

    /// True when a bound virtio-balloon device offers free page reporting.
    package static var isOn: Bool {
        guard let devices = try? FileManager.default.contentsOfDirectory(atPath: driver) else { return false }
        return devices.filter { $0.hasPrefix("virtio") }.contains { device in
            guard let features = try? String(contentsOfFile: "\(driver)/\(device)/features", encoding: .ascii) else { return false }
            return offersReporting(features)
        }
    }

    /// `features` is the device's feature bits as the sysfs file shows them: one '0' or '1'
    /// per bit, bit 0 first.
    static func offersReporting(_ features: String) -> Bool {
        let bits = Array(features.utf8)
        return bits.count > featureBit && bits[featureBit] == UInt8(ascii: "1")
    }

    /// How to turn it off for a run, and back on (root).
    package static let advice = "the host's free page reporting (virtio-balloon) is on: copies may stall while a neighbour "
        + "frees page cache. To measure without it: `echo DEVICE > \(driver)/unbind` (DEVICE: the virtio* entry there), "
        + "and `echo DEVICE > \(driver)/bind` afterwards"
}

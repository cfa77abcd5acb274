import FoundationEssentials
import Glibc
import ProVideoSystem

/// The block layer's I/O scheduler of a disk under the pool (`/sys/block/DISK/queue/scheduler`),
/// and what it does with the idle I/O class a landing runs in (`IdlePriority`): the class is a
/// request to the scheduler, which may ignore it. Read on each call: an administrator changes
/// the scheduler at any time by writing that file.
package struct IOScheduler: Codable, Sendable, Equatable {
    /// What the scheduler does with a request in the idle class (`IOPRIO_CLASS_IDLE`).
    package enum IdlePriority: String, Codable, Sendable {
        /// BFQ serves the idle class when no other class has I/O waiting
        /// (Documentation/block/bfq-iosched.rst).
        case honoured
        /// mq-deadline (Linux 5.14, "block/mq-deadline: Prioritize high-priority requests")
        /// dispatches no lower-class request while a higher-class one is queued, and one anyway
        /// once it has waited `prio_aging_expire` (`agingSeconds`).
        case heldBack
        /// `none` and Kyber have no priority classes; nor had mq-deadline before Linux 5.14
        /// (it has no `iosched/prio_aging_expire` file).
        case ignored
        /// A scheduler this code does not know.
        case unknown
    }

    /// The disk's name in /sys/block ("vda", "sda", "nvme0n1").
    package var disk: String
    /// The active scheduler ("mq-deadline", "bfq", "none", "kyber").
    package var name: String
    package var idlePriority: IdlePriority
    /// mq-deadline's `iosched/prio_aging_expire`, in seconds (sysfs holds milliseconds): the
    /// longest it holds an idle-class request back. nil for other schedulers.
    package var agingSeconds: Double?

    package init(disk: String, name: String, idlePriority: IdlePriority, agingSeconds: Double? = nil) {
        self.disk = disk
        self.name = name
        self.idlePriority = idlePriority
        self.agingSeconds = agingSeconds
    }

    /// The active scheduler in the text of a `queue/scheduler` file: the one in brackets
    /// ("none [mq-deadline] kyber bfq" → "mq-deadline"), or the only word of a queue that
    /// cannot have one ("none"); nil for anything else.
    package static func active(in text: String) -> String? {
        let words = text.split(whereSeparator: \.isWhitespace)
        if let chosen = words.first(where: { $0.count > 2 && $0.hasPrefix("[") && $0.hasSuffix("]") }) {
            return String(chosen.dropFirst().dropLast())
        }
        return words.count == 1 ? String(words[0]) : nil
    }

    /// The scheduler of each disk under the filesystem holding `path`, found from the
    /// filesystem's device number (`st_dev`, else its mount's source device: btrfs reports an
    /// anonymous number) in /sys/dev/block: a partition's queue is its disk's, and a
    /// device-mapper or md device's I/O goes to the disks it is built on (`slaves/`). Empty on
    /// a filesystem without a block device (tmpfs, overlayfs, NFS, FUSE).
    package static func disks(holding path: String) -> [IOScheduler] {
        guard let facts = try? FileSystem.facts(path) else { return [] }
        var number = "\(facts.deviceMajor):\(facts.deviceMinor)"
        if !FileSystem.exists("/sys/dev/block/" + number) {
            let mount = MountInfo.find(mountID: facts.mountID)
            guard let source = mount?.source, source.hasPrefix("/dev/"), let node = try? FileSystem.facts(source),
                  node.mode & UInt32(S_IFMT) == UInt32(S_IFBLK) else { return [] }
            number = "\(node.representedDeviceMajor):\(node.representedDeviceMinor)"
        }
        return disks(ofDevice: number)
    }

    /// The scheduler of each disk block device `number` ("MAJ:MIN") sends its I/O to, read from
    /// `sysfs` (a test's own tree in its place).
    static func disks(ofDevice number: String, sysfs: String = "/sys") -> [IOScheduler] {
        var seen = Set<String>()
        return diskDirectories(under: sysfs + "/dev/block/" + number, depth: 0).compactMap { directory in
            guard let real = FileSystem.realPath(directory), seen.insert(real).inserted else { return nil }
            return read(disk: real)
        }
    }

    /// The sysfs directories of the disks that `block` (a sysfs block device directory) sends
    /// its I/O to: itself, its disk when it is a partition, the disks under its slaves.
    private static func diskDirectories(under block: String, depth: Int) -> [String] {
        let slaves = (try? FileManager.default.contentsOfDirectory(atPath: block + "/slaves")) ?? []
        // A stack of device-mapper and md layers is a few deep; the bound stops a loop.
        if !slaves.isEmpty && depth < 8 {
            return slaves.sorted().flatMap { diskDirectories(under: block + "/slaves/" + $0, depth: depth + 1) }
        }
        return [FileSystem.exists(block + "/partition") ? block + "/.." : block]
    }

    /// The scheduler of the disk whose sysfs directory is `directory`; nil when it has no queue.
    private static func read(disk directory: String) -> IOScheduler? {
        let queue = directory + "/queue"
        guard FileSystem.exists(queue) else { return nil }
        // A queue without the file (a bio-based device such as zram) schedules nothing.
        let text = (try? FileSystem.readSmallFile(queue + "/scheduler")).map { String(decoding: $0, as: UTF8.self) } ?? "none"
        guard let name = active(in: text) else { return nil }
        let disk = FileSystem.lastComponent(of: directory)
        switch name {
        case "bfq":
            return IOScheduler(disk: disk, name: name, idlePriority: .honoured)
        case "mq-deadline":
            guard let aging = FileSystem.readInteger(queue + "/iosched/prio_aging_expire") else {
                return IOScheduler(disk: disk, name: name, idlePriority: .ignored)
            }
            return IOScheduler(disk: disk, name: name, idlePriority: .heldBack, agingSeconds: Double(aging) / 1000)
        case "none", "kyber":
            return IOScheduler(disk: disk, name: name, idlePriority: .ignored)
        default:
            return IOScheduler(disk: disk, name: name, idlePriority: .unknown)
        }
    }
}

extension Pool {
    /// The I/O scheduler of each disk under the pool's filesystem (`IOScheduler.disks`); empty
    /// where it has no block device.
    package var ioSchedulers: [IOScheduler] { IOScheduler.disks(holding: path) }
}

import Foundation
import TestSupport
import Testing
@testable import ProVideoStorage

/// The active I/O scheduler is the word in brackets of `queue/scheduler` (Documentation/block/switching-sched.rst).
@Suite struct IOSchedulerTests {
    @Test(arguments: [
        ("[none] mq-deadline", "none"),
        ("mq-deadline kyber [bfq] none\n", "bfq"),
        ("none [mq-deadline] kyber bfq \n", "mq-deadline"),
        // A queue that cannot have a scheduler lists only "none", without brackets.
        ("none\n", "none"),
    ])
    func theBracketedSchedulerIsTheActiveOne(_ text: String, _ active: String) {
        #expect(IOScheduler.active(in: text) == active)
    }

    @Test(arguments: ["", "\n", "mq-deadline kyber bfq", "[] none"])
    func textWithoutAChoiceNamesNone(_ text: String) {
        #expect(IOScheduler.active(in: text) == nil)
    }

    /// tmpfs, procfs and sysfs have no block device, so no scheduler.
    @Test(arguments: ["/dev/shm", "/proc", "/sys"])
    func aFilesystemWithoutADeviceHasNoScheduler(_ path: String) {
        #expect(IOScheduler.disks(holding: path) == [])
    }
}

/// Which disk's queue counts, on a made-up sysfs tree shaped as the kernel's: a partition's is
/// its disk's, and a device-mapper or md device's are those of the disks under its slaves.
@Suite struct IOSchedulerDiskTests {
    private func withTree(_ body: (String) throws -> Void) throws {
        try TestSupport.withScratch("sysfs") { root in
            let files = [
                "devices/pci/sda/queue/scheduler": "mq-deadline kyber [bfq] none\n",
                "devices/pci/sda/sda2/partition": "2\n",
                "devices/pci/nvme0n1/queue/scheduler": "[none] mq-deadline kyber bfq\n",
                "devices/virtual/dm-0/queue/scheduler": "none\n",
                "devices/virtual/md0/queue/scheduler": "none\n",
            ]
            for (path, text) in files {
                try FileManager.default.createDirectory(atPath: root + "/" + FileSystem.parent(of: path),
                                                        withIntermediateDirectories: true)
                try text.write(toFile: root + "/" + path, atomically: false, encoding: .utf8)
            }
            let links = [
                "dev/block/8:2": "../../devices/pci/sda/sda2",
                "dev/block/259:0": "../../devices/pci/nvme0n1",
                "dev/block/254:0": "../../devices/virtual/dm-0",
                "dev/block/9:0": "../../devices/virtual/md0",
                "devices/virtual/dm-0/slaves/sda2": "../../../pci/sda/sda2",
                "devices/virtual/md0/slaves/sda2": "../../../pci/sda/sda2",
                "devices/virtual/md0/slaves/nvme0n1": "../../../pci/nvme0n1",
            ]
            for (path, target) in links {
                try FileManager.default.createDirectory(atPath: root + "/" + FileSystem.parent(of: path),
                                                        withIntermediateDirectories: true)
                try FileManager.default.createSymbolicLink(atPath: root + "/" + path, withDestinationPath: target)
            }
            try body(root)
        }
    }

    @Test func aPartitionUsesItsDisksQueue() throws {
        try withTree { root in
            #expect(IOScheduler.disks(ofDevice: "8:2", sysfs: root) == [IOScheduler(disk: "sda", name: "bfq", idlePriority: .honoured)])
        }
    }

    @Test func aMappedDeviceUsesTheQueuesOfTheDisksBelow() throws {
        try withTree { root in
            #expect(IOScheduler.disks(ofDevice: "254:0", sysfs: root) == [IOScheduler(disk: "sda", name: "bfq", idlePriority: .honoured)])
            #expect(IOScheduler.disks(ofDevice: "9:0", sysfs: root) == [
                IOScheduler(disk: "nvme0n1", name: "none", idlePriority: .ignored),
                IOScheduler(disk: "sda", name: "bfq", idlePriority: .honoured),
            ])
        }
    }

    /// mq-deadline without `iosched/prio_aging_expire` predates its priority classes (Linux 5.14).
    @Test func mqDeadlineHoldsBackOnlyWithPriorityClasses() throws {
        try withTree { root in
            try "none [mq-deadline] kyber bfq\n".write(toFile: root + "/devices/pci/nvme0n1/queue/scheduler",
                                                       atomically: false, encoding: .utf8)
            #expect(IOScheduler.disks(ofDevice: "259:0", sysfs: root).first?.idlePriority == .ignored)
            try FileManager.default.createDirectory(atPath: root + "/devices/pci/nvme0n1/queue/iosched",
                                                    withIntermediateDirectories: true)
            try "3000\n".write(toFile: root + "/devices/pci/nvme0n1/queue/iosched/prio_aging_expire", atomically: false,
                               encoding: .utf8)
            #expect(IOScheduler.disks(ofDevice: "259:0", sysfs: root)
                    == [IOScheduler(disk: "nvme0n1", name: "mq-deadline", idlePriority: .heldBack, agingSeconds: 3)])
        }
    }
}

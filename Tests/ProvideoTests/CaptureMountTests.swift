import Foundation
import Glibc
import TestSupport
import Testing

/// `provideo mount` (issue 27, Docs/CAPTURE-MOUNT.md): unmodified programs record into the
/// pool through a FUSE mount of a destination directory. Each case runs the real daemon
/// (`provideo mount --foreground`) and the real programs (ffmpeg, dd, cp, GStreamer) as
/// separate processes, and compares what lands with what the same program writes to a plain
/// directory.
@Suite(.serialized, .enabled(if: TestSupport.isRoot && FileManager.default.fileExists(atPath: "/dev/fuse"),
                             "needs root and /dev/fuse"))
struct CaptureMountTests {
    /// A pool, a destination directory and the daemon serving `mount`.
    struct MountedPool {
        let scratch: String, pool: String, mount: String, destination: String
        let daemon: Process

        /// Waits for `name` to land in the destination directory (the daemon finishes a
        /// capture once the kernel releases its last descriptor, just after close(2)).
        func landed(_ name: String, seconds: Double = 20) -> String? {
            // A take appears whole: renamed into place, or published once copied and verified.
            let path = destination + "/" + name
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                if FileManager.default.fileExists(atPath: path) { return path }
                usleep(20_000)
            }
            return nil
        }

        func remainingCapacity() throws -> Int64? {
            let status = try provideo("status", "--json")
            let object = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
            return (object?["remainingCapacity"] as? NSNumber)?.int64Value
        }

        func provideo(_ arguments: String...) throws -> TestSupport.ProcessResult {
            try TestSupport.run("provideo", ["--pool", pool] + arguments)
        }
    }

    static func isMounted(_ path: String) -> Bool {
        ((try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8)) ?? "")
            .split(separator: "\n").contains { $0.split(separator: " ").dropFirst().first.map(String.init) == path }
    }

    /// Creates a pool of `capacity`, mounts it over `mount/` showing `destination/`, runs
    /// `body`, then unmounts, stops the daemon and removes everything, whatever happened.
    static func withMount(capacity: String = "64M", extra: [String] = [], _ name: String = #function,
                          _ body: (MountedPool) throws -> Void) throws {
        try TestSupport.withScratch("mount-" + name) { scratch in
            let pool = scratch + "/pool", mount = scratch + "/mnt", destination = scratch + "/dest"
            try TestSupport.shell("mkdir -p '\(mount)' '\(destination)'")
            let created = try TestSupport.run("provideo", ["--pool", pool, "create", "--capacity", capacity])
            try #require(created.status == 0, "create: \(created.stderr)")
            let daemon = try TestSupport.start("provideo", ["--pool", pool, "mount", mount, "--destination", destination,
                                                            "--foreground"] + extra)
            defer {
                if isMounted(mount) { _ = try? TestSupport.shell("umount '\(mount)' 2>/dev/null || umount -l '\(mount)'") }
                let deadline = Date().addingTimeInterval(20)
                while daemon.isRunning && Date() < deadline { usleep(20_000) }
                if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) }
                daemon.waitUntilExit()
                if isMounted(mount) { _ = try? TestSupport.shell("umount -l '\(mount)'") }
            }
            let deadline = Date().addingTimeInterval(15)
            while !isMounted(mount) && daemon.isRunning && Date() < deadline { usleep(20_000) }
            try #require(isMounted(mount), "the mount did not appear")
            try body(MountedPool(scratch: scratch, pool: pool, mount: mount, destination: destination, daemon: daemon))
        }
    }

    static func hasTool(_ name: String) -> Bool { (try? TestSupport.shell("command -v \(name)")) != nil }

    /// ffmpeg's non-fragmented MOV (moov at the end, `mdat`'s size patched by seeking back)
    /// and the same with `+faststart` (which reads the file back to move moov to the front):
    /// the landed file is byte-identical to what the same command writes to a plain file.
    @Test(.enabled(if: hasTool("ffmpeg")))
    func ffmpegMovIsByteIdenticalToAPlainFile() throws {
        try Self.withMount { mounted in
            let source = mounted.scratch + "/source.mov"
            try TestSupport.shell("ffmpeg -v error -f lavfi -i testsrc=duration=4:size=640x360:rate=25 -c:v mpeg4 -q:v 2 "
                                  + "-fflags +bitexact -y '\(source)'")
            for (index, flags) in ["", "-movflags +faststart"].enumerated() {
                let plain = mounted.scratch + "/plain\(index).mov"
                let command = "ffmpeg -v error -i '\(source)' -c copy -fflags +bitexact \(flags) -f mov"
                try TestSupport.shell("\(command) '\(plain)'")
                try TestSupport.shell("\(command) '\(mounted.mount)/take\(index).mov'")
                let landed = try #require(mounted.landed("take\(index).mov"), "take\(index).mov did not land")
                let expected = try Data(contentsOf: URL(fileURLWithPath: plain))
                #expect(expected.count > 100_000)
                let same = (try? Data(contentsOf: URL(fileURLWithPath: landed))) == expected
                #expect(same, "take\(index).mov (\(flags)) differs from the plain file")
            }
            #expect(try mounted.provideo("check").status == 0)
        }
    }

    /// A take past 4 GiB: ffmpeg's MOV then patches a 64-bit `mdat` size at the start. 290
    /// frames of 2160p UYVY (4.8 GB, size is the point here) land byte-identical to the same
    /// command writing a plain file.
    @Test(.enabled(if: hasTool("ffmpeg") && hasTool("cmp")))
    func aTakePastFourGiBIsByteIdentical() throws {
        try Self.withMount(capacity: "5G") { mounted in
            let command = "ffmpeg -v error -f rawvideo -pix_fmt uyvy422 -s 3840x2160 -r 25 -i /dev/zero -frames:v 290 "
                + "-c copy -fflags +bitexact -f mov"
            try TestSupport.shell("\(command) '\(mounted.mount)/big.mov'")
            let landed = try #require(mounted.landed("big.mov", seconds: 60))
            let size = try FileManager.default.attributesOfItem(atPath: landed)[.size] as? Int64 ?? 0
            #expect(size > 4 << 30, "the take has \(size) bytes")
            let plain = mounted.scratch + "/plain.mov"
            try TestSupport.shell("\(command) '\(plain)'")
            defer { try? FileManager.default.removeItem(atPath: plain) }
            #expect((try? TestSupport.shell("cmp '\(plain)' '\(landed)' && echo same"))?.contains("same") == true,
                    "the 4.8 GB take differs from the plain file")
        }
    }

    /// `cp` and `dd bs=4M` are byte-identical, and `df` on the mount shows the pool's capacity
    /// (not the disk's), falling while a file is written and open.
    @Test func cpAndDdLandWholeAndDfShowsThePool() throws {
        try Self.withMount { mounted in
            let source = mounted.scratch + "/source.bin"
            let bytes = TestSupport.pattern(24 << 20, seed: 27)
            try Data(bytes).write(to: URL(fileURLWithPath: source))
            var before = statvfs()
            #expect(statvfs(mounted.mount, &before) == 0)
            #expect(Int64(before.f_blocks) * Int64(before.f_frsize) == 64 << 20, "df shows \(before.f_blocks) blocks")
            #expect(Int64(before.f_bavail) * Int64(before.f_frsize) == 64 << 20)

            try TestSupport.shell("cp '\(source)' '\(mounted.mount)/copied.bin'")
            let copied = try #require(mounted.landed("copied.bin"))
            let copiedSame = TestSupport.fileHolds(copied, bytes)
            #expect(copiedSame, "cp's file differs")

            // While dd's file is open (held by a second descriptor), the pool shows it taken.
            let holder = open(mounted.mount + "/held.bin", O_WRONLY | O_CREAT | O_EXCL, 0o644)
            try #require(holder >= 0, "create in the mount: \(String(cString: strerror(errno)))")
            let chunk = TestSupport.pattern(8 << 20, seed: 5)
            #expect(chunk.withUnsafeBytes { Glibc.write(holder, $0.baseAddress, $0.count) } == chunk.count)
            var during = statvfs()
            #expect(statvfs(mounted.mount, &during) == 0)
            #expect(Int64(during.f_bavail) * Int64(during.f_frsize) <= (64 << 20) - (8 << 20),
                    "the capacity did not fall while writing: \(during.f_bavail) blocks free")
            var size = stat()
            #expect(stat(mounted.mount + "/held.bin", &size) == 0 && size.st_size == 8 << 20)
            #expect(fsync(holder) == 0)
            close(holder)
            let held = try #require(mounted.landed("held.bin"))
            let heldSame = TestSupport.fileHolds(held, chunk)
            #expect(heldSame)

            _ = try mounted.provideo("replenish")
            try TestSupport.shell("dd if='\(source)' of='\(mounted.mount)/dd.bin' bs=4M status=none")
            let dd = try #require(mounted.landed("dd.bin"))
            let ddSame = TestSupport.fileHolds(dd, bytes)
            #expect(ddSame, "dd's file differs")
            // The view lists what landed, as the destination directory does.
            let listed = try FileManager.default.contentsOfDirectory(atPath: mounted.mount).sorted()
            #expect(listed == ["copied.bin", "dd.bin", "held.bin"])
        }
    }

    /// A full pool: the writer gets "No space left on device" and what it wrote lands, whole.
    @Test func aFullPoolIsENOSPCAndKeepsWhatWasWritten() throws {
        try Self.withMount(capacity: "16M") { mounted in
            let source = mounted.scratch + "/source.bin"
            let bytes = TestSupport.pattern(40 << 20, seed: 9)
            try Data(bytes).write(to: URL(fileURLWithPath: source))
            let result = try TestSupport.run("/bin/dd", ["if=" + source, "of=" + mounted.mount + "/full.bin", "bs=1M"])
            #expect(result.status != 0)
            #expect(result.stderr.contains("No space left on device"), "\(result.stderr)")
            let landed = try #require(mounted.landed("full.bin"))
            let kept = try Data(contentsOf: URL(fileURLWithPath: landed))
            #expect(kept.count >= 12 << 20 && kept.count <= 16 << 20, "kept \(kept.count) bytes")
            let prefix = kept.elementsEqual(bytes.prefix(kept.count))
            #expect(prefix, "the kept bytes are not the source's prefix")
        }
    }

    /// Write semantics: a write past the end zero-fills the gap, a write below it patches, a
    /// rename while the file is open moves where it lands, and an unlink cancels the capture.
    @Test func writesRenamesAndUnlinks() throws {
        try Self.withMount { mounted in
            let fd = open(mounted.mount + "/take.part", O_RDWR | O_CREAT | O_EXCL, 0o644)
            try #require(fd >= 0, "\(String(cString: strerror(errno)))")
            let head = TestSupport.pattern(100_000, seed: 1)
            #expect(head.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) } == head.count)
            let tail = TestSupport.pattern(5_000, seed: 2)
            #expect(tail.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 200_000) } == tail.count)
            #expect(Array("HEAD".utf8).withUnsafeBytes { pwrite(fd, $0.baseAddress, 4, 10) } == 4)
            var back = [UInt8](repeating: 0, count: 8)
            #expect(back.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 8, 8) } == 8)
            #expect(Array(back[2..<6]) == Array("HEAD".utf8))
            #expect(rename(mounted.mount + "/take.part", mounted.mount + "/take.mov") == 0)
            close(fd)
            let landed = try #require(mounted.landed("take.mov"))
            var expected = head + [UInt8](repeating: 0, count: 100_000) + tail
            expected.replaceSubrange(10..<14, with: Array("HEAD".utf8))
            let same = TestSupport.fileHolds(landed, expected)
            #expect(same, "the take's bytes differ")
            #expect(!FileManager.default.fileExists(atPath: mounted.destination + "/take.part"))

            let before = try mounted.remainingCapacity()
            let doomed = open(mounted.mount + "/doomed.mov", O_WRONLY | O_CREAT | O_EXCL, 0o644)
            try #require(doomed >= 0)
            #expect(head.withUnsafeBytes { Glibc.write(doomed, $0.baseAddress, $0.count) } == head.count)
            #expect(unlink(mounted.mount + "/doomed.mov") == 0)
            #expect(head.withUnsafeBytes { Glibc.write(doomed, $0.baseAddress, $0.count) } == -1)
            close(doomed)
            usleep(300_000)
            #expect(!FileManager.default.fileExists(atPath: mounted.destination + "/doomed.mov"))
            #expect(try mounted.remainingCapacity() == before, "the cancelled capture's space did not come back")
        }
    }

    /// `mount --json` (issue 42): each event is one JSON object per line on standard output,
    /// with the facts a script acts on: a refused second writer names the file and the user, a
    /// landed take its path and its bytes.
    @Test func jsonReportsEachEventOnItsOwnLine() throws {
        try Self.withMount(extra: ["--json"]) { mounted in
            let path = mounted.mount + "/take.bin"
            let writer = open(path, O_WRONLY | O_CREAT, 0o644)
            try #require(writer >= 0, "open: \(String(cString: strerror(errno)))")
            let bytes = [UInt8](repeating: 7, count: 300_000)
            #expect(write(writer, bytes, bytes.count) == bytes.count)
            let second = open(path, O_WRONLY)
            #expect(second == -1 && errno == EBUSY)
            close(writer)
            let landed = try #require(mounted.landed("take.bin"), "take.bin did not land")
            let events = try Self.events(of: mounted.daemon, until: { $0.contains { $0["event"] as? String == "landed" } })
            let refused = events.first { $0["event"] as? String == "openRefused" }
            #expect(refused?["name"] as? String == "take.bin" && refused?["uid"] as? Int == 0, "\(events)")
            let take = events.first { $0["event"] as? String == "landed" }
            #expect(take?["name"] as? String == "take.bin" && take?["path"] as? String == landed, "\(events)")
            #expect(take?["bytes"] as? Int == bytes.count && (take?["seconds"] as? Double ?? -1) >= 0, "\(events)")
            // Its mode was set (reported before `landed` when it could not be).
            #expect(!events.contains { $0["event"] as? String == "modeNotSet" }, "\(events)")
        }
    }

    /// The JSON lines the daemon wrote on its standard output, read as they come until `done`
    /// holds (or 20 s passed): the daemon runs on, so its pipe is polled, never read to its end.
    static func events(of daemon: Process, until done: ([[String: Any]]) -> Bool) throws -> [[String: Any]] {
        let fd = (daemon.standardOutput as! Pipe).fileHandleForReading.fileDescriptor
        var text = "", events: [[String: Any]] = []
        let deadline = Date().addingTimeInterval(20)
        while !done(events) && Date() < deadline {
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 100) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = read(fd, &chunk, chunk.count)
            guard n > 0 else { break }
            text += String(decoding: chunk[..<n], as: UTF8.self)
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            text = String(lines.last ?? "")
            for line in lines.dropLast() {
                let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                events.append(try #require(object, "not a JSON object: \(line)"))
            }
        }
        return events
    }

    /// A take in progress has one writer's open (issue 39, D1 and D2): an `O_TRUNC` open of it
    /// (`echo hello > M/take` while it records) is `EPERM`, a second open for writing is
    /// `EBUSY`, a reader is let in; the take lands as its writer wrote it. Before, both opens
    /// wrote into the take: the second writer's bytes over the first's start.
    @Test func aTakeInProgressHasOneWriter() throws {
        try Self.withMount { mounted in
            let path = mounted.mount + "/one.bin"
            let writer = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            try #require(writer >= 0, "\(String(cString: strerror(errno)))")
            let bytes = TestSupport.pattern(3 << 20, seed: 11)
            #expect(bytes.withUnsafeBytes { Glibc.write(writer, $0.baseAddress, $0.count) } == bytes.count)
            // A take only grows: cutting it, through its writer or by name, is refused (issue 63:
            // a truncate that succeeded survived the suite).
            let cut = ftruncate(writer, 1 << 20)
            let cutError = errno
            #expect(cut == -1 && cutError == EPERM, "ftruncate: \(cut), \(String(cString: strerror(cutError)))")
            let cutByName = Glibc.truncate(path, 0)
            let cutByNameError = errno
            #expect(cutByName == -1 && cutByNameError == EPERM,
                    "truncate: \(cutByName), \(String(cString: strerror(cutByNameError)))")
            let truncating = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            let truncatingError = errno
            #expect(truncating == -1 && truncatingError == EPERM, "O_TRUNC open: \(truncating), \(String(cString: strerror(truncatingError)))")
            let second = open(path, O_WRONLY | O_APPEND)
            let secondError = errno
            #expect(second == -1 && secondError == EBUSY, "second writer: \(second), \(String(cString: strerror(secondError)))")
            for fd in [truncating, second] where fd >= 0 {
                _ = Array("hello\n".utf8).withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
                close(fd)
            }
            let reader = open(path, O_RDONLY)
            try #require(reader >= 0, "a reader was refused: \(String(cString: strerror(errno)))")
            var first = [UInt8](repeating: 0, count: 4096)
            #expect(first.withUnsafeMutableBytes { pread(reader, $0.baseAddress, 4096, 0) } == 4096)
            #expect(first == Array(bytes.prefix(4096)))
            close(reader)
            close(writer)
            let landed = try #require(mounted.landed("one.bin"))
            let same = TestSupport.fileHolds(landed, bytes)
            #expect(same, "the take is not what its writer wrote")
            // Landed, it is a file of the destination: a shared mapping of it works through the
            // mount (D4: every file was direct I/O, and mmap failed with ENODEV).
            let file = open(path, O_RDWR)
            try #require(file >= 0, "\(String(cString: strerror(errno)))")
            defer { close(file) }
            let mapped = mmap(nil, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, file, 0)
            let mapError = errno
            try #require(mapped != MAP_FAILED, "shared mmap through the mount: \(String(cString: strerror(mapError)))")
            defer { munmap(mapped, 4096) }
            #expect(Array(UnsafeRawBufferPointer(start: mapped, count: 4096)) == Array(bytes.prefix(4096)))
        }
    }

    /// Write-then-rename onto a file that exists (a muxer replacing last run's `x.mov`) replaces
    /// it whether the rename comes before or after the close (issue 39, D3: before the close it
    /// was EEXIST, after it the file was replaced).
    @Test func aRenameOntoAFileReplacesItBeforeOrAfterTheClose() throws {
        try Self.withMount { mounted in
            let bytes = TestSupport.pattern(2_000_000, seed: 12)
            for renameFirst in [true, false] {
                let old = mounted.destination + "/x.mov"
                try Data("last run\n".utf8).write(to: URL(fileURLWithPath: old))
                let fd = open(mounted.mount + "/x.tmp", O_WRONLY | O_CREAT | O_EXCL, 0o644)
                try #require(fd >= 0, "\(String(cString: strerror(errno)))")
                #expect(bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } == bytes.count)
                if !renameFirst { close(fd) }
                let renamed = rename(mounted.mount + "/x.tmp", mounted.mount + "/x.mov")
                #expect(renamed == 0, "rename \(renameFirst ? "before" : "after") the close: \(String(cString: strerror(errno)))")
                if renameFirst { close(fd) }
                // The old file is there all along: wait for the take to be in its place.
                let deadline = Date().addingTimeInterval(20)
                while !TestSupport.fileHolds(old, bytes) && Date() < deadline { usleep(20_000) }
                let same = TestSupport.fileHolds(old, bytes)
                #expect(same, "x.mov is not the take (rename \(renameFirst ? "before" : "after") the close)")
                #expect(!FileManager.default.fileExists(atPath: mounted.destination + "/x.tmp"))
                try FileManager.default.removeItem(atPath: old)
            }
        }
    }

    /// The races a recorder's own pattern meets: a rename right after close (while the finish
    /// may run) lands under the new name; a reader that stays open does not keep the take from
    /// landing; a directory holding a capture can be neither removed nor renamed; a mount over
    /// its own destination is refused.
    @Test func closeThenRenameReadersAndDirectories() throws {
        try Self.withMount { mounted in
            let bytes = TestSupport.pattern(3_000_000, seed: 8)
            for index in 0..<5 {
                let fd = open(mounted.mount + "/t\(index).tmp", O_WRONLY | O_CREAT | O_EXCL, 0o600)
                try #require(fd >= 0)
                #expect(bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } == bytes.count)
                close(fd)
                #expect(rename(mounted.mount + "/t\(index).tmp", mounted.mount + "/t\(index).mov") == 0,
                        "rename after close: \(String(cString: strerror(errno)))")
                let landed = try #require(mounted.landed("t\(index).mov"))
                let same = TestSupport.fileHolds(landed, bytes)
                #expect(same)
                #expect(!FileManager.default.fileExists(atPath: mounted.destination + "/t\(index).tmp"))
                #expect(try AccessTests.owner(landed).mode == "600", "the mode asked for at create")
            }
            // A reader open on the take does not hold it back.
            let writer = open(mounted.mount + "/read.mov", O_WRONLY | O_CREAT | O_EXCL, 0o644)
            try #require(writer >= 0)
            #expect(bytes.withUnsafeBytes { Glibc.write(writer, $0.baseAddress, $0.count) } == bytes.count)
            let reader = open(mounted.mount + "/read.mov", O_RDONLY)
            try #require(reader >= 0)
            var first = [UInt8](repeating: 0, count: 4096)
            #expect(first.withUnsafeMutableBytes { pread(reader, $0.baseAddress, 4096, 0) } == 4096)
            #expect(first == Array(bytes.prefix(4096)))
            close(writer)
            let landed = mounted.landed("read.mov")
            close(reader)
            #expect(landed != nil, "a reader kept the take from landing")
            // A directory with a capture in it stays where the capture lands.
            #expect(mkdir(mounted.mount + "/day1", 0o755) == 0)
            let inside = open(mounted.mount + "/day1/cam.mov", O_WRONLY | O_CREAT | O_EXCL, 0o644)
            try #require(inside >= 0)
            #expect(rename(mounted.mount + "/day1", mounted.mount + "/day2") == -1 && errno == EBUSY)
            close(inside)
            #expect(mounted.landed("day1/cam.mov") != nil)
            // Mounting over the destination would serve itself.
            let over = try TestSupport.run("provideo", ["--pool", mounted.pool, "mount", mounted.destination,
                                                        "--destination", mounted.destination, "--foreground"])
            #expect(over.status == 2 && over.stderr.contains("overlap"), "\(over.stderr)")
        }
    }

    /// The daemon killed mid-take: the writer sees ENOTCONN, and `provideo recover` places the
    /// committed prefix (everything before the writer's fsync at least), byte for byte.
    @Test func aKilledDaemonsTakeIsRecovered() throws {
        try Self.withMount { mounted in
            let fd = open(mounted.mount + "/killed.mov", O_WRONLY | O_CREAT | O_EXCL, 0o644)
            try #require(fd >= 0)
            let bytes = TestSupport.pattern(12 << 20, seed: 31)
            #expect(bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, 8 << 20) } == 8 << 20)
            #expect(fsync(fd) == 0)
            #expect(bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + (8 << 20), 4 << 20) } == 4 << 20)
            kill(mounted.daemon.processIdentifier, SIGKILL)
            mounted.daemon.waitUntilExit()
            let afterKill = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, 4096) }
            let error = errno
            #expect(afterKill == -1 && error == ENOTCONN, "a write after the kill: \(afterKill), \(String(cString: strerror(error)))")
            close(fd)
            _ = try TestSupport.shell("umount '\(mounted.mount)' 2>/dev/null || umount -l '\(mounted.mount)'")
            let recovered = try mounted.provideo("recover")
            #expect(recovered.status == 0, "\(recovered.stderr)")
            let path = mounted.destination + "/killed.mov"
            let kept = try Data(contentsOf: URL(fileURLWithPath: path))
            #expect(kept.count >= 8 << 20 && kept.count <= 12 << 20, "recovered \(kept.count) bytes")
            let prefix = kept.elementsEqual(bytes.prefix(kept.count))
            #expect(prefix, "the recovered bytes are not the written prefix")
        }
    }

    /// GStreamer's `filesink` behind qtmux (which seeks back to patch) and matroskamux: every
    /// frame is there, as ffprobe reads them.
    @Test(.enabled(if: hasTool("gst-launch-1.0") && hasTool("ffprobe")))
    func gstreamerFilesinkTakesAreComplete() throws {
        try Self.withMount { mounted in
            for (name, muxer) in [("b.mov", "qtmux"), ("c.mkv", "matroskamux")] {
                try TestSupport.shell("gst-launch-1.0 -q videotestsrc num-buffers=60 ! video/x-raw,width=320,height=240,framerate=25/1 "
                                      + "! avenc_mpeg4 ! \(muxer) ! filesink location='\(mounted.mount)/\(name)'")
                let landed = try #require(mounted.landed(name), "\(name) did not land")
                let frames = try TestSupport.shell("ffprobe -v error -count_frames -select_streams v:0 "
                                                   + "-show_entries stream=nb_read_frames -of csv=p=0 '\(landed)'")
                #expect(frames.trimmingCharacters(in: .whitespacesAndNewlines) == "60", "\(name): \(frames)")
            }
        }
    }

    /// Two members of the pool's group write through one root `--allow-other` mount: each
    /// recording is its writer's, with the group `provideo record` gives the same user's take
    /// (the pool's: issue 39, D5, the rule stated); a user outside the group is refused
    /// (EACCES) and nothing of theirs lands.
    @Test func eachUserRecordsAsThemselfThroughAnAllowOtherMount() throws {
        typealias Users = AccessTests
        try Users.withUsers { scratch, binary in
            let pool = scratch + "/pool", mount = scratch + "/mnt", destination = scratch + "/out"
            try TestSupport.shell("mkdir -m 755 '\(mount)'")
            let created = try TestSupport.run(binary, ["--pool", pool, "create", "--capacity", "32M", "--group", Users.group])
            try #require(created.status == 0, "create: \(created.stderr)")
            let daemon = try TestSupport.start(binary, ["--pool", pool, "mount", mount, "--destination", destination,
                                                        "--allow-other", "--foreground"])
            defer {
                if Self.isMounted(mount) { _ = try? TestSupport.shell("umount '\(mount)' || umount -l '\(mount)'") }
                let deadline = Date().addingTimeInterval(20)
                while daemon.isRunning && Date() < deadline { usleep(20_000) }
                if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) }
                daemon.waitUntilExit()
            }
            let deadline = Date().addingTimeInterval(15)
            while !Self.isMounted(mount) && daemon.isRunning && Date() < deadline { usleep(20_000) }
            try #require(Self.isMounted(mount), "the mount did not appear")
            for user in [Users.admin, Users.recorder, Users.outsider] {
                let result = try TestSupport.run("/usr/bin/setpriv", [
                    "--reuid=\(user)", "--regid=\(user)", "--init-groups", "/bin/sh", "-c",
                    "umask 022; head -c 2000000 /dev/zero > '\(mount)/\(user).bin'"])
                if user == Users.outsider {
                    #expect(result.status != 0 && result.stderr.contains("Permission denied"), "\(result.stderr)")
                } else {
                    #expect(result.status == 0, "\(user): \(result.stderr)")
                }
            }
            for user in [Users.admin, Users.recorder] {
                let path = destination + "/\(user).bin"
                let appeared = Date().addingTimeInterval(20)
                while !FileManager.default.fileExists(atPath: path) && Date() < appeared { usleep(20_000) }
                #expect(try Users.owner(path).user == user)
                #expect((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) == 2_000_000)
            }
            #expect(!FileManager.default.fileExists(atPath: destination + "/\(Users.outsider).bin"))
            let recorded = destination + "/\(Users.recorder)-record.bin"
            let record = try TestSupport.run("/usr/bin/setpriv", [
                "--reuid=\(Users.recorder)", "--regid=\(Users.recorder)", "--init-groups", "/bin/sh", "-c",
                "head -c 2000000 /dev/zero | '\(binary)' --pool '\(pool)' record '\(recorded)' --bitrate 20M"])
            #expect(record.status == 0, "record: \(record.stderr)")
            let mounted = try Users.owner(destination + "/\(Users.recorder).bin"), direct = try Users.owner(recorded)
            #expect(mounted.user == direct.user && mounted.group == direct.group,
                    "through the mount \(mounted), through record \(direct)")
            #expect(try TestSupport.run(binary, ["--pool", pool, "check"]).status == 0)
        }
    }
}

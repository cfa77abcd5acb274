import Foundation

/// fio writing a file the way a capture does: sequential `O_DIRECT` writes of `blockSize`
/// bytes through io_uring, `queueDepth` in flight, into the existing file from offset 0.
package struct FioRun: Sendable {
    package var file: String
    /// Bytes to write.
    package var bytes: Int64
    /// Bytes per write.
    package var blockSize: Int
    package var queueDepth: Int
    /// Registered buffers (`fixedbufs`), as our engine uses when the memlock limit allows.
    package var fixedBuffers: Bool
    /// Buffers on hugetlb pages (`iomem=mmaphuge`, needs `vm.nr_hugepages`), the nearest fio
    /// has to our transparent-huge-page buffers; otherwise fio's default, malloc on 4 KiB pages.
    package var hugePages: Bool
    /// An fdatasync after every this many writes (`--fdatasync=N`), to match a capture's
    /// commit cadence; nil: none, as fio writes by default.
    package var fdatasyncEvery: Int?

    package init(file: String, bytes: Int64, blockSize: Int, queueDepth: Int, fixedBuffers: Bool, hugePages: Bool,
                 fdatasyncEvery: Int? = nil) {
        self.fdatasyncEvery = fdatasyncEvery
        self.file = file
        self.bytes = bytes
        self.blockSize = blockSize
        self.queueDepth = queueDepth
        self.fixedBuffers = fixedBuffers
        self.hugePages = hugePages
    }

    /// The command line; `fallocate=none` so that fio neither allocates nor lays out the file;
    /// `thread` so the job dies with fio (a forked job would outlive a killed parent).
    package var arguments: [String] {
        ["--name=provideo-calibrate", "--thread", "--filename=\(file)", "--rw=write", "--bs=\(blockSize)", "--iodepth=\(queueDepth)",
         "--ioengine=io_uring", "--direct=1", "--size=\(bytes)", "--offset=0", "--fallocate=none",
         "--fixedbufs=\(fixedBuffers ? 1 : 0)"] + (hugePages ? ["--iomem=mmaphuge"] : [])
            + (fdatasyncEvery.map { ["--fdatasync=\($0)", "--end_fsync=1"] } ?? []) + ["--output-format=json"]
    }

    /// Checks that `vm.nr_hugepages` leaves room for `bytes` of fio buffers on hugetlb pages.
    /// - Throws: `BenchError` naming the sysctl to set.
    package static func checkHugePages(for bytes: Int) throws {
        let meminfo = (try? String(contentsOfFile: "/proc/meminfo", encoding: .utf8)) ?? ""
        func field(_ name: String) -> Int {
            let line = meminfo.split(separator: "\n").first { $0.hasPrefix(name + ":") } ?? ""
            return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
        }
        let pageBytes = max(field("Hugepagesize") * 1024, 1)
        let needed = (bytes + pageBytes - 1) / pageBytes + 1
        guard field("HugePages_Free") >= needed else {
            throw BenchError("--fio-hugetlb needs \(needed) free hugetlb pages, \(field("HugePages_Free")) are free: "
                             + "`sysctl vm.nr_hugepages=\(field("HugePages_Total") + needed)` (set it back afterwards)")
        }
    }

    /// Runs fio and returns its write bandwidth in bytes per second.
    /// - Throws: `BenchError` when fio is missing, fails, or prints no bandwidth.
    package func run() throws -> Double {
        guard let fio = ["/usr/bin/fio", "/usr/local/bin/fio"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw BenchError("fio is not installed: `apt-get install fio`")
        }
        let process = Process()
        // setpriv's parent-death signal kills fio if we die without a chance to stop it (SIGKILL):
        // an orphaned fio would go on writing into a reserve the pool then reports free.
        let setpriv = "/usr/bin/setpriv"
        if FileManager.default.isExecutableFile(atPath: setpriv) {
            process.executableURL = URL(fileURLWithPath: setpriv)
            process.arguments = ["--pdeathsig", "KILL", fio] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: fio)
            process.arguments = arguments
        }
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let watcher = Thread {
            while process.isRunning {
                if Interruption.requested { process.terminate() }
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
        watcher.start()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        try Interruption.check()
        guard process.terminationStatus == 0 else {
            throw BenchError("fio failed (status \(process.terminationStatus)): \(message)")
        }
        return try Self.bandwidth(fromJSON: data)
    }

    /// `jobs[0].write.bw_bytes` from fio's JSON output (which may follow notes in plain text).
    static func bandwidth(fromJSON data: Data) throws -> Double {
        let start = data.firstIndex(of: UInt8(ascii: "{")) ?? data.startIndex
        let object = try? JSONSerialization.jsonObject(with: data[start...]) as? [String: Any]
        guard let jobs = object?["jobs"] as? [[String: Any]], let write = jobs.first?["write"] as? [String: Any],
              let bandwidth = (write["bw_bytes"] as? NSNumber)?.doubleValue, bandwidth > 0 else {
            throw BenchError("fio printed no write bandwidth: \(String(decoding: data.prefix(400), as: UTF8.self))")
        }
        return bandwidth
    }
}

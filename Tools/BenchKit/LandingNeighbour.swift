import Foundation
import Glibc
import ProVideoStorage

/// The landing neighbour: a finished take of `size` bytes waiting in a scratch pool on the
/// measured filesystem, landed by a separate process (this executable, `land-neighbour POOL`)
/// with the library's landing (`Pool.landPending`: idle I/O priority, chunked, verified) to a
/// directory on another filesystem, such as a GlusterFS mount, while the modes run. Its reads
/// of the pool's copy compete with the captures for the disk.
package final class LandingNeighbour {
    private let process: Process
    private let poolDirectory: String
    /// The child's standard error: why it stopped, when it did.
    private let childLog: String
    /// Where the take lands.
    package let destination: String

    /// Records the take into `<directory>/land-pool` (with `LandingMode.background`) and starts
    /// the lander.
    /// - Throws: a library error (no space, a destination on the pool's own filesystem).
    package init(directory: String, landTo: String, size: Int64, log: (String) -> Void) throws {
        poolDirectory = directory + "/land-pool"
        destination = "\(landTo)/provideo-bench-land-\(getpid()).mov"
        let pool = try Pool.create(at: poolDirectory, capacity: size + (64 << 20), measuringBandwidth: false)
        var options = CaptureOptions(bitrate: 8_000_000_000)
        options.landing = .background
        let capture = try pool.startCapture(to: destination, options: options)
        let piece = [UInt8](repeating: 0x5A, count: 4 << 20)
        var written: Int64 = 0
        log("landing neighbour: recording a \(ByteFormat.human(size)) take into \(poolDirectory)")
        while written < size {
            let count = Int(min(Int64(piece.count), size - written))
            try piece.withUnsafeBytes { try capture.append(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            written += Int64(count)
        }
        let result = try capture.finish()
        guard result.landingTo != nil else {
            throw BenchError("\(landTo) is on the pool's filesystem: --land-to needs another filesystem")
        }
        process = Process()
        process.executableURL = URL(fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        process.arguments = ["land-neighbour", poolDirectory]
        childLog = directory + "/land-neighbour.log"
        guard FileManager.default.createFile(atPath: childLog, contents: nil),
              let logFile = FileHandle(forWritingAtPath: childLog) else {
            throw BenchError("the landing neighbour's log \(childLog) cannot be created")
        }
        process.standardError = logFile
        try process.run()
        log("landing neighbour: landing it at \(destination) (process \(process.processIdentifier))")
    }

    /// The child's body: lands what waits in `pool` until killed or done, then idles until its
    /// parent goes.
    package static func run(pool path: String) -> Never {
        let parent = getppid()
        do {
            _ = try Pool.open(at: path).landPending { getppid() != parent }
        } catch {
            FileHandle.standardError.write(Data("land-neighbour: \(error)\n".utf8))
        }
        while getppid() == parent { sleep(1) }
        exit(0)
    }

    /// Says how far the take landed, stops the lander, and removes the scratch pool (with
    /// whatever of the take is still in it) and what landed.
    /// - Throws: `BenchError` when the neighbour landed nothing or its process failed: a run
    ///   labelled "noise: land" had no such noise.
    package func stop(log: (String) -> Void) throws {
        let exitedEarly = !process.isRunning
        let progress = try? Pool.open(at: poolDirectory).landings().first
        if let progress {
            log("landing neighbour: \(ByteFormat.human(progress.landedBytes)) of \(ByteFormat.human(progress.length)) "
                + "landed when the runs ended")
        } else {
            log("landing neighbour: the take had landed before the runs ended")
        }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        defer { removeFiles() }
        let said = ((try? String(contentsOfFile: childLog, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        if exitedEarly && process.terminationStatus != 0 {
            throw BenchError("the landing neighbour failed (exit \(process.terminationStatus)): \(said.isEmpty ? "no message" : said)")
        }
        if let progress, progress.landedBytes == 0 {
            throw BenchError("the landing neighbour landed nothing during the runs\(said.isEmpty ? "" : ": " + said); the "
                             + "runs had no landing noise")
        }
    }

    private func removeFiles() {
        let directory = (destination as NSString).deletingLastPathComponent
        let name = (destination as NSString).lastPathComponent
        for file in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        where file == name || file.hasPrefix(".\(name).provideo-") {
            try? FileManager.default.removeItem(atPath: directory + "/" + file)
        }
        try? FileManager.default.removeItem(atPath: poolDirectory)
    }
}

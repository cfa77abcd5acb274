import CommandLineSupport
import Foundation
import ProVideoStorage

/// `provideo demo`: the product's main job end to end on built-in defaults. Creates a small
/// pool if none exists, records a ProRes 422 HQ stream that ffmpeg generates (fragmented MOV
/// on a pipe, as a live recorder would write it), checks the result with ffprobe, and prints
/// the pool's status before and after.
enum Demo {
    static let poolCapacity: Int64 = 256 << 20
    static let outputDirectory = "/var/tmp/provideo-demo"

    static func run(_ path: String, _ arguments: inout Arguments) throws {
        let seconds = try arguments.option("--seconds").map { Int($0) ?? 0 } ?? 3
        let json = arguments.flag("--json")
        try arguments.finish()
        // With --json, one JSON object at the end; the walk-through's lines are for people.
        func say(_ line: String) { if !json { print(line) } }
        guard seconds > 0 else { throw UsageError("--seconds takes a whole number of seconds") }
        for tool in ["ffmpeg", "ffprobe"] where which(tool) == nil {
            throw ProVideoError(.invalidArgument, "the demo needs \(tool): install it with `apt-get install ffmpeg`")
        }
        let pool: Pool
        var created = false
        do {
            pool = try Pool.open(at: path)
        } catch let error as ProVideoError where error.code == .poolNotFound {
            say("no pool at \(path): creating one of \(ByteFormat.human(poolCapacity))")
            pool = try Pool.create(at: path, capacity: poolCapacity, measuringBandwidth: false)
            created = true
        }
        say("== pool before ==")
        let before = try pool.status()
        say(statusLine(before))
        try FileManager.default.createDirectory(atPath: outputDirectory, withIntermediateDirectories: true)
        let stamp = Int(Date().timeIntervalSince1970)
        let destination = "\(outputDirectory)/demo-\(stamp)-\(getpid()).mov"

        let ffmpeg = Process()
        ffmpeg.executableURL = URL(fileURLWithPath: which("ffmpeg")!)
        ffmpeg.arguments = ["-hide_banner", "-loglevel", "error", "-f", "lavfi",
                            "-i", "testsrc2=size=1280x720:rate=25", "-t", "\(seconds)",
                            "-c:v", "prores_ks", "-profile:v", "3", "-pix_fmt", "yuv422p10le",
                            "-f", "mov", "-movflags", "frag_keyframe+empty_moov", "pipe:1"]
        let pipe = Pipe()
        ffmpeg.standardOutput = pipe
        say("== recording \(seconds) s of 1280x720p25 ProRes 422 HQ from ffmpeg into the pool ==")
        try ffmpeg.run()
        let capture = try pool.startCapture(to: destination, options: CaptureOptions(bitrate: 150_000_000))
        let outcome = try Recorder.capture(from: pipe.fileHandleForReading.fileDescriptor, into: capture)
        let result = outcome.result
        ffmpeg.waitUntilExit()
        guard ffmpeg.terminationStatus == 0 else {
            throw ProVideoError(.ioError, "ffmpeg failed (status \(ffmpeg.terminationStatus)); the partial recording is at \(result.path)")
        }
        if !json { try Recorder.report(outcome, poolPath: pool.path) }

        let frames = try probeFrames(result.path)
        let expected = seconds * 25
        say("ffprobe: \(frames) ProRes frames decoded from \(result.path) (expected \(expected))")
        say("== pool after ==")
        let after = try pool.status()
        say(statusLine(after))
        guard frames == expected else {
            throw ProVideoError(.ioError, "the recording has \(frames) frames, expected \(expected)")
        }
        let copied = Recorder.wasCopied(result, poolPath: pool.path)
        if json {
            return try CommandLineProgram.printJSON(CommandReports.Demo(
                pool: pool.path, poolCreated: created, clip: result.path, length: result.length, frames: frames,
                expectedFrames: expected, copied: copied, remainingCapacityBefore: before.remainingCapacity,
                remainingCapacityAfter: after.remainingCapacity))
        }
        say("demo ok: \(result.path)")
        say("the clip is \(result.path): remove it with `rm \(result.path)`")
        if !copied {
            say("the clip took its space from the reserve (the pool's file was renamed to it): "
                + "`provideo --pool \(pool.path) replenish` returns that space to the pool")
        }
        say("the pool is \(pool.path)" + (created ? " (the demo created it)" : "")
            + ": `provideo --pool \(pool.path) destroy` removes it")
    }

    static func statusLine(_ status: PoolStatus) -> String {
        "  \(status.path) on \(status.filesystem): capacity \(ByteFormat.human(status.initialCapacity)), "
            + "remaining \(ByteFormat.human(status.remainingCapacity)), busy: "
            + (status.busyReasons.isEmpty ? "no" : status.busyReasons.description)
            + ", engine \(status.engine)"
    }

    /// Decodes every frame of the file's video stream and returns how many there were.
    static func probeFrames(_ path: String) throws -> Int {
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: which("ffprobe")!)
        probe.arguments = ["-v", "error", "-count_frames", "-select_streams", "v:0",
                           "-show_entries", "stream=nb_read_frames,codec_name", "-of", "csv=p=0", path]
        let pipe = Pipe()
        probe.standardOutput = pipe
        try probe.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        probe.waitUntilExit()
        let fields = output.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",")
        guard probe.terminationStatus == 0, fields.count == 2, fields[0] == "prores", let frames = Int(fields[1]) else {
            throw ProVideoError(.ioError, "ffprobe could not decode \(path): \(output)")
        }
        return frames
    }

    static func which(_ tool: String) -> String? {
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        return directories.map { "\($0)/\(tool)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}

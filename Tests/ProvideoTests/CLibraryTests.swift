import Foundation
import Glibc
import TestSupport
import Testing

/// libprovideo from C (Tools/c-library): the API test program, an FFmpeg muxer writing a
/// regular MOV through a custom AVIOContext, and the GStreamer sink, each built against the
/// installed library with pkg-config alone and run as its own process.
@Suite(.serialized) struct CLibraryTests {
    /// Every call of provideo.h, bad handles, NULL pointers, a busy pool, storage full,
    /// in-place appends and landing on another filesystem (/dev/shm, tmpfs), checked byte for
    /// byte by the C program itself; the take it leaves waiting lands with `provideo land`.
    @Test func apiTestProgramPassesEveryCheck() throws {
        try TestSupport.withScratchOnAnotherFilesystem { landing in
            try TestSupport.withScratch { scratch in
                let library = try CLibrary(scratch: scratch)
                for file in ["lib/libprovideo.so", "lib/libprovideo.so.1", "include/provideo.h", "lib/pkgconfig/provideo.pc",
                             "bin/provideo"] {
                    #expect(FileManager.default.fileExists(atPath: library.prefix + "/" + file), "\(file) not installed")
                }
                try library.compile("api-test.c", to: scratch + "/api-test")
                let pool = scratch + "/pool"
                try FS.createPool(pool, capacity: "16M")
                // No LD_LIBRARY_PATH: the program's RUNPATH finds libprovideo.so, the library's the Swift runtime.
                let result = try TestSupport.run(scratch + "/api-test", [pool, "16777216", scratch, landing],
                                                 environment: ["LD_LIBRARY_PATH": ""])
                #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
                #expect(result.stdout.contains(", 0 failed"), "\(result.stdout)")
                // The pools the program created: one from options of an older, shorter struct
                // (its max_captures read, the rest defaulted), one with 2 captures at a time.
                #expect(try TestSupport.poolStatus(scratch + "/made-from-c-older").maxCaptures == 1)
                #expect(try TestSupport.poolStatus(scratch + "/made-from-c").maxCaptures == 2)
                #expect(!FileManager.default.fileExists(atPath: landing + "/lands-later.mov"))
                let land = try TestSupport.run("provideo", ["--pool", pool, "land"])
                #expect(land.status == 0, "\(land.stdout)\(land.stderr)")
                let landed = (try? Data(contentsOf: URL(fileURLWithPath: landing + "/lands-later.mov"))) ?? Data()
                let inFinish = (try? Data(contentsOf: URL(fileURLWithPath: landing + "/landed-in-finish.mov"))) ?? Data()
                #expect(landed.count == 1 << 20 && landed == inFinish, "both takes hold the same MiB")
                let status = try TestSupport.run("provideo", ["--pool", pool, "status", "--json"])
                #expect(status.stdout.contains("\"busyReasons\" : [\n\n  ]") || status.stdout.contains("\"busyReasons\" : []"))
            }
        }
    }

    /// The library's dynamic symbols are exactly the functions provideo.h declares, each of
    /// symbol version PROVIDEO_1, and the four 1.1 added of PROVIDEO_1.1 (a program built against
    /// 1.1 then names what it needs, and an older library refuses it at load time): no Swift
    /// symbol and no pv_* helper of the C shim is exported (Sources/ProVideoC/libprovideo.map).
    /// Checked on the built file and the installed one.
    @Test func libraryExportsOnlyTheHeadersFunctions() throws {
        try TestSupport.withScratch { scratch in
            let header = try String(contentsOfFile: CLibrary.header, encoding: .utf8)
            let declared = Set(header.matches(of: #/^[a-z_ ]+[ *](provideo_[a-z_]+)\(/#.anchorsMatchLineEndings())
                .map { String($0.output.1) })
            let added = Set(["provideo_pool_create_options_init", "provideo_pool_create", "provideo_pool_resize",
                             "provideo_pool_measure_bandwidth"])
            #expect(declared.count == 24 && declared.isSuperset(of: added) && declared.contains("provideo_is_supported")
                    && declared.contains("provideo_capture_read"), "\(declared.sorted())")
            let library = try CLibrary(scratch: scratch)
            for file in [TestSupport.productsDirectory + "/libProVideoC.so", library.prefix + "/lib/libprovideo.so.1"] {
                let lines = try TestSupport.shell("nm -D --defined-only '\(file)'").split(separator: "\n")
                let symbols = lines.compactMap { $0.split(separator: " ").last.map(String.init) }
                #expect(symbols.count == lines.count && !symbols.isEmpty, "\(lines)")
                let exported = Set(symbols.map { String($0.prefix { $0 != "@" }) })
                let extra = exported.subtracting(declared).sorted(), missing = declared.subtracting(exported).sorted()
                #expect(exported == declared, "exported but not in provideo.h: \(extra); in provideo.h but not exported: \(missing)")
                #expect(symbols.allSatisfy { symbol in
                    symbol.hasSuffix(added.contains(String(symbol.prefix { $0 != "@" })) ? "@@PROVIDEO_1.1" : "@@PROVIDEO_1")
                }, "\(symbols)")
                #expect(lines.allSatisfy { $0.contains(" T ") }, "only functions: \(lines)")
            }
        }
    }

    static var hasAbidiff: Bool { FileManager.default.isExecutableFile(atPath: "/usr/bin/abidiff") }

    /// The ABI only grows within soname libprovideo.so.1 (issue 42 item 2), checked by abidiff
    /// (Debian's abigail-tools) against 1.0.0's, kept in Tools/c-library/abi/: no exported
    /// function removed or moved to another symbol version (the installed library's symbols),
    /// and no 1.0.0 type changed (the types' layouts, from abi-types.c built against the
    /// installed header: the library's functions are Swift, whose DWARF libabigail does not read
    /// as C). What 1.1 added shows as added, and only as added.
    @Test(.enabled(if: hasAbidiff, "abidiff is not installed (apt-get install abigail-tools)"))
    func theABIGrowsOnly() throws {
        try TestSupport.withScratch { scratch in
            let library = try CLibrary(scratch: scratch)
            let baseline = CLibrary.sources + "/abi"
            let symbols = try TestSupport.run("/usr/bin/abidiff", [baseline + "/libprovideo-1.0.0.abi",
                                                                   library.prefix + "/lib/libprovideo.so.1"])
            #expect(symbols.status & (1 | 2 | 8) == 0 && symbols.stdout.contains("Functions changes summary: 0 Removed, 0 Changed")
                    && symbols.stdout.contains("Function symbols changes summary: 0 Removed")
                    && symbols.stdout.contains("provideo_pool_create@@PROVIDEO_1.1"), "abidiff: \(symbols)")
            let types = scratch + "/abi-types.so"
            try TestSupport.shell("cc -g -O0 -shared -fPIC -I '\(library.prefix)/include' -o '\(types)' '\(CLibrary.sources)/abi-types.c'")
            let layouts = try TestSupport.run("/usr/bin/abidiff", [baseline + "/provideo-1.0.0.types.abi", types])
            #expect(layouts.status & (1 | 2 | 8) == 0 && layouts.stdout.contains("Functions changes summary: 0 Removed, 0 Changed")
                    && layouts.stdout.contains("provideo_abi_types_1_1"), "abidiff: \(layouts)")
        }
    }

    /// The smallest recorder of Docs/C-LIBRARY.md builds with pkg-config alone, creates its
    /// pool with the C API (issue 42: a C recorder had to run `provideo create` first; the pool
    /// made so has its bandwidth measured, as the CLI's) and records.
    @Test func minimalRecorderFromTheDocs() throws {
        try TestSupport.withScratch { scratch in
            let library = try CLibrary(scratch: scratch)
            try library.compile("minimal-recorder.c", to: scratch + "/minimal-recorder")
            let pool = scratch + "/pool", take = scratch + "/take.mov"
            let bytes = TestSupport.pattern(3_000_003, seed: 12)
            let result = try TestSupport.run(scratch + "/minimal-recorder", [pool, take, "16777216"], stdin: Data(bytes))
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains("recorded 3000003 bytes to \(take)"), "\(result.stdout)")
            #expect(TestSupport.fileHolds(take, bytes))
            let made = try TestSupport.poolStatus(pool)
            let bandwidth = made.bandwidth.map { "\($0) bit/s" } ?? "none"
            #expect(made.initialCapacity == 16 << 20 && made.bandwidth != nil,
                    "the C-made pool: \(made.initialCapacity) bytes, bandwidth \(bandwidth)")
            // The destination exists now: the library's message, exit 1, the file untouched.
            let again = try TestSupport.run(scratch + "/minimal-recorder", [pool, take], stdin: Data(bytes.prefix(10)))
            #expect(again.status == 1)
            #expect(again.stderr.contains("never overwritten") && again.stderr.contains("(the destination exists)"),
                    "\(again.stderr)")
            #expect(TestSupport.fileHolds(take, bytes))
        }
    }

    /// A ProRes 422 HQ encode of testsrc2, remuxed by libavformat into a capture through a
    /// custom AVIOContext, is byte for byte the file `ffmpeg -c copy` writes straight to disk:
    /// a regular MOV (mdat, then moov; no fragments) whose mdat size was patched by a seek back.
    @Test func ffmpegMuxerWritesTheSameMovThroughThePool() throws {
        try TestSupport.withScratch { scratch in
            let (remux, source, reference, pool, take) = try FFmpegRemux.prepare(in: scratch, poolCapacity: "32M")
            let result = try TestSupport.run(remux, ["--pool", pool, source, take])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains("25 packets"), "\(result.stdout)")
            #expect(!result.stdout.contains(" 0 patches"), "the muxer's header rewrite went through write-at: \(result.stdout)")

            let identical = TestSupport.readFile(take) == TestSupport.readFile(reference)
            #expect(identical, "the pool's MOV differs from ffmpeg's")
            #expect(try Probe.frames(take) == 25)
            #expect(try Probe.codec(take) == "prores,HQ")
            let frames = try Probe.frameMD5(take)
            #expect(frames.count == 25)
            #expect(frames == (try Probe.frameMD5(reference)))
            let atoms = Probe.atoms(take).map(\.0)
            #expect(atoms.contains("mdat") && atoms.last == "moov" && !atoms.contains("moof"), "\(atoms)")
            let mdat = Probe.atoms(take).first { $0.0 == "mdat" }?.1 ?? 0
            #expect(mdat > 4_000_000, "the mdat size was patched: \(mdat)")

            // The same code path into a plain file gives the same bytes too.
            let plain = scratch + "/plain.mov"
            #expect(try TestSupport.run(remux, ["--file", source, plain]).status == 0)
            let samePlain = TestSupport.readFile(plain) == TestSupport.readFile(reference)
            #expect(samePlain)
        }
    }

    /// -movflags +faststart: the muxer's second pass reopens its output to read it back while it
    /// moves `moov` to the front; the example serves those reads from the capture
    /// (provideo_capture_read), and the take is byte for byte ffmpeg's own +faststart file.
    @Test func ffmpegFaststartReadsBackFromTheCapture() throws {
        try TestSupport.withScratch { scratch in
            let (remux, source, reference, pool, take) = try FFmpegRemux.prepare(in: scratch, movflags: "+faststart",
                                                                                 poolCapacity: "32M")
            #expect(Probe.atoms(reference).map(\.0) == ["ftyp", "moov", "wide", "mdat"])
            let result = try TestSupport.run(remux, ["--movflags", "+faststart", "--pool", pool, source, take])
            #expect(result.status == 0, "\(result.stderr)")
            let identical = TestSupport.readFile(take) == TestSupport.readFile(reference)
            #expect(identical, "the pool's +faststart MOV differs from ffmpeg's")
            #expect(Probe.atoms(take).map(\.0) == ["ftyp", "moov", "wide", "mdat"])
            #expect(try Probe.frameMD5(take) == (try Probe.frameMD5(reference)))

            let plain = scratch + "/plain.mov"
            #expect(try TestSupport.run(remux, ["--movflags", "+faststart", "--file", source, plain]).status == 0)
            let samePlain = TestSupport.readFile(plain) == TestSupport.readFile(reference)
            #expect(samePlain)

            let unknown = try TestSupport.run(remux, ["--movflags", "+nosuchflag", "--pool", pool, source, scratch + "/x.mov"])
            #expect(unknown.status == 1 && !FileManager.default.fileExists(atPath: scratch + "/x.mov"), "\(unknown.stderr)")
        }
    }

    /// A pool too small for the input: the capture is finished, not cancelled, so what landed
    /// stays: exit 1 (no crash), a message naming the partial take, and the take is the first
    /// bytes of ffmpeg's own file (the muxer's output before its trailer: the mdat size still
    /// the placeholder 0 the trailer would have patched).
    @Test func ffmpegKeepsThePartialTakeWhenThePoolIsFull() throws {
        try TestSupport.withScratch { scratch in
            let (remux, source, reference, pool, take) = try FFmpegRemux.prepare(in: scratch, poolCapacity: "4M")
            let result = try TestSupport.run(remux, ["--pool", pool, source, take])
            #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
            #expect(result.stderr.contains("storage full") && result.stderr.contains("the partial take (")
                    && result.stderr.contains(" is at \(take)\n"), "\(result.stderr)")
            #expect(result.stderr.contains("the moov atom, is missing, so players cannot open it as is")
                    && result.stderr.contains("frag_keyframe+empty_moov"), "\(result.stderr)")
            let partial = TestSupport.readFile(take), full = TestSupport.readFile(reference)
            #expect(partial.count > 1 << 20 && partial.count <= 4 << 20 && partial.count < full.count, "\(partial.count) bytes")
            #expect(result.stderr.contains("(\(partial.count) bytes"), "\(result.stderr)")
            // The mdat atom's 32-bit size: 0 in the take, patched in ffmpeg's file.
            let mdat = Probe.atoms(reference).prefix { $0.0 != "mdat" }.reduce(0) { $0 + Int($1.1) }
            #expect(Array(full[mdat + 4..<mdat + 8]) == Array("mdat".utf8) && full[mdat..<mdat + 4] != [0, 0, 0, 0])
            var expected = Array(full.prefix(partial.count))
            expected.replaceSubrange(mdat..<mdat + 4, with: [0, 0, 0, 0])
            #expect(partial == expected, "the partial take is not the start of ffmpeg's file")
            #expect(try TestSupport.poolListing(pool).recordings.isEmpty, "finished into place, nothing left in the pool")
        }
    }
}

extension CLibraryTests {
    /// The same cut-off take written fragmented: the example says it plays up to its last whole
    /// fragment rather than that its index is missing (issue 42: it said "players cannot open it"
    /// of a fragmented MOV that ffprobe reads), and ffprobe decodes frames from it.
    @Test func aFragmentedPartialTakeIsSaidToPlay() throws {
        try TestSupport.withScratch { scratch in
            let (remux, source, _, pool, take) = try FFmpegRemux.prepare(in: scratch, movflags: "frag_keyframe+empty_moov",
                                                                         poolCapacity: "4M")
            let result = try TestSupport.run(remux, ["--movflags", "frag_keyframe+empty_moov", "--pool", pool, source, take])
            #expect(result.status == 1 && result.stderr.contains("storage full")
                    && result.stderr.contains("a fragmented MOV: players open it up to its last whole fragment")
                    && !result.stderr.contains("cannot open it"), "\(result.stderr)")
            let probe = try TestSupport.shell("ffprobe -v error -count_frames -select_streams v:0 -show_entries "
                                              + "stream=nb_read_frames -of csv=p=0 '\(take)'")
            let frames = Int(probe.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
            #expect(frames > 0 && frames < 25, "ffprobe read \(frames) frames: \(probe)")
        }
    }
}

/// ffmpeg-remux.c built against the installed library, and its input: a ProRes 422 HQ encode
/// of testsrc2 (25 frames of 1280x720, 4.8 MB), made once so the outputs can be compared.
enum FFmpegRemux {
    static func build(in scratch: String) throws -> (remux: String, source: String) {
        let library = try CLibrary(scratch: scratch)
        let remux = scratch + "/ffmpeg-remux", source = scratch + "/source.mov"
        try library.compile("ffmpeg-remux.c", to: remux, packages: ["libavformat", "libavcodec", "libavutil"])
        try TestSupport.shell("ffmpeg -v error -f lavfi -i testsrc2=size=1280x720:rate=25 -frames:v 25 -c:v prores_ks "
                              + "-profile:v 3 -fflags +bitexact -flags +bitexact -f mov \(source)")
        return (remux, source)
    }

    /// The example and its input built, ffmpeg's own MOV of the input at `reference` (with
    /// `movflags`), a pool of `poolCapacity`, and the take's path.
    static func prepare(in scratch: String, movflags: String? = nil, poolCapacity: String) throws
        -> (remux: String, source: String, reference: String, pool: String, take: String) {
        let (remux, source) = try build(in: scratch)
        let reference = scratch + "/reference.mov"
        try TestSupport.shell("ffmpeg -v error -i \(source) -c copy -fflags +bitexact "
                              + (movflags.map { "-movflags \($0) " } ?? "") + "-f mov \(reference)")
        let pool = scratch + "/pool"
        try FS.createPool(pool, capacity: poolCapacity)
        return (remux, source, reference, pool, scratch + "/take.mov")
    }
}

/// provideosink in gst-launch pipelines (the plugin built from Tools/c-library/gstprovideosink.c).
@Suite(.serialized) struct GStreamerSinkTests {
    struct Plugin {
        let environment: [String: String]
        /// gst-run (Tools/c-library/gst-run.c): a pipeline straight to PLAYING, its peak RSS.
        let runner: String
        init(scratch: String) throws {
            let library = try CLibrary(scratch: scratch)
            let directory = scratch + "/gst"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try library.compile("gstprovideosink.c", to: directory + "/libgstprovideosink.so",
                                packages: ["gstreamer-1.0", "gstreamer-base-1.0"], shared: true)
            runner = scratch + "/gst-run"
            try library.compile("gst-run.c", to: runner, packages: ["gstreamer-1.0"])
            // A registry of its own: the test neither reads nor rewrites the user's cache.
            environment = ["GST_PLUGIN_PATH": directory, "GST_REGISTRY": scratch + "/registry.bin"]
        }

        /// Runs `gst-launch-1.0 videotestsrc num-buffers=N ! … ! MUXER ! provideosink …`.
        /// `bitrate` nil leaves the sink's property unset; `debug` adds the sink's log
        /// (`GST_DEBUG=provideosink:4`) to the standard error.
        func record(frames: Int, size: String = "640x360", muxer: String = "qtmux", pool: String,
                    location: String, landing: String? = nil, bitrate: Int64? = 200_000_000,
                    debug: Bool = false) throws -> TestSupport.ProcessResult {
            let dimensions = size.split(separator: "x")
            let pipeline = "videotestsrc num-buffers=\(frames) ! video/x-raw,width=\(dimensions[0]),height=\(dimensions[1]) "
                + "! videoconvert ! video/x-raw,format=I422_10LE ! avenc_prores_ks profile=hq ! \(muxer) "
                + "! provideosink pool=\(pool) location=\(location)" + (bitrate.map { " bitrate=\($0)" } ?? "")
                + (landing.map { " landing=\($0)" } ?? "")
            return try TestSupport.run("/usr/bin/gst-launch-1.0", ["-q"] + pipeline.split(separator: " ").map(String.init),
                                       environment: environment.merging(debug ? ["GST_DEBUG": "provideosink:4",
                                                                                  "GST_DEBUG_NO_COLOR": "1"] : [:]) { $1 })
        }
    }

    /// A scratch directory with the plugin built and a pool of `capacity` in it.
    static func withPluginAndPool(capacity: String, _ body: (Plugin, _ pool: String, _ scratch: String) throws -> Void) throws {
        try TestSupport.withScratch { scratch in
            let plugin = try Plugin(scratch: scratch)
            try FS.createPool(scratch + "/pool", capacity: capacity)
            try body(plugin, scratch + "/pool", scratch)
        }
    }

    /// qtmux writes a regular MOV (it seeks back to patch the mdat size), matroskamux a
    /// Matroska file (it seeks back to patch sizes and cues): each decodes to N frames.
    @Test func recordsWhatTheMuxerWrites() throws {
        try Self.withPluginAndPool(capacity: "32M") { plugin, pool, scratch in
            let mov = scratch + "/take.mov"
            let result = try plugin.record(frames: 30, pool: pool, location: mov)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(try Probe.frames(mov) == 30)
            #expect(try Probe.codec(mov) == "prores,HQ")
            let atoms = Probe.atoms(mov).map(\.0)
            #expect(atoms.contains("mdat") && atoms.last == "moov" && !atoms.contains("moof"), "\(atoms)")

            let mkv = scratch + "/take.mkv"
            #expect(try plugin.record(frames: 12, muxer: "matroskamux", pool: pool, location: mkv).status == 0)
            #expect(try Probe.frames(mkv) == 12)

            // The destination exists: the library's message, the file untouched.
            let before = TestSupport.readFile(mov)
            let again = try plugin.record(frames: 5, pool: pool, location: mov)
            #expect(again.status != 0)
            #expect(again.stderr.contains("already exists; it is never overwritten"), "\(again.stderr)")
            let untouched = TestSupport.readFile(mov) == before
            #expect(untouched)
        }
    }

    /// An unset bitrate is the stream's: the sink holds its first second of buffers, sizes the
    /// capture's buffers to three seconds of their rate and declares that rate, where before
    /// every such stream got 32 MiB and was declared as 880 Mbit/s. The rate it logs is the
    /// file's (ffprobe's, within a tenth: the muxer's headers are not frames), and the frames
    /// it held are all in the take.
    @Test func anUnsetBitrateIsMeasuredFromTheStream() throws {
        try Self.withPluginAndPool(capacity: "64M") { plugin, pool, scratch in
            let mov = scratch + "/take.mov"
            let result = try plugin.record(frames: 45, pool: pool, location: mov, bitrate: nil, debug: true)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(try Probe.frames(mov) == 45)
            let line = try #require(result.stderr.split(separator: "\n").first { $0.contains("stream measured at") },
                                    "the sink logged no measured rate: \(result.stderr.suffix(2000))")
            // "… stream measured at R bit/s over T (B bytes): S bytes of buffers"
            let numbers = line.components(separatedBy: "stream measured at ").last!.split(separator: " ").compactMap { Int64($0) }
            let (measured, budget) = (try #require(numbers.first), try #require(numbers.last))
            #expect(budget == measured / 8 * 3, "\(line)")
            let probed = try #require(Int64(TestSupport.shell("ffprobe -v error -show_entries format=bit_rate -of csv=p=0 \(mov)")
                .trimmingCharacters(in: .whitespacesAndNewlines)))
            #expect(abs(Double(measured) / Double(probed) - 1) < 0.1, "measured \(measured) bit/s, the file has \(probed)")
            #expect(measured != 880_000_000)
        }
    }

    /// landing=background to another filesystem (/dev/shm): the pipeline ends with the take
    /// waiting in the pool, and `provideo land` puts it at the location, decodable; a landing
    /// value the sink does not know fails the pipeline before any capture starts.
    @Test func landingInTheBackground() throws {
        try TestSupport.withScratchOnAnotherFilesystem { elsewhere in
            try TestSupport.withScratch { scratch in
                let plugin = try Plugin(scratch: scratch)
                let pool = scratch + "/pool"
                try FS.createPool(pool, capacity: "32M")
                let location = elsewhere + "/take.mov"
                let result = try plugin.record(frames: 20, pool: pool, location: location, landing: "background")
                #expect(result.status == 0, "\(result.stderr)")
                #expect(!FileManager.default.fileExists(atPath: location))
                #expect(try TestSupport.poolListing(pool).recordings.count == 1)
                let land = try TestSupport.run("provideo", ["--pool", pool, "land"])
                #expect(land.status == 0, "\(land.stderr)")
                #expect(try Probe.frames(location) == 20)
                #expect(try TestSupport.poolListing(pool).recordings.isEmpty)

                let unknown = try plugin.record(frames: 5, pool: pool, location: elsewhere + "/other.mov", landing: "later")
                #expect(unknown.status != 0)
                #expect(unknown.stderr.contains("landing=later: use automatic, finish or background"), "\(unknown.stderr)")
                #expect(!FileManager.default.fileExists(atPath: elsewhere + "/other.mov"))
            }
        }
    }

    /// A full pool and a busy pool fail the pipeline with the library's message; the full one
    /// leaves no file and gives the capacity back (the sink cancels on error).
    @Test func failuresCarryTheLibrarysMessage() throws {
        try TestSupport.withScratch { scratch in
            let plugin = try Plugin(scratch: scratch)
            let pool = scratch + "/pool"
            // One capture at a time, so that a running recorder makes the pool busy.
            try FS.createPool(pool, capacity: "4M", options: ["--max-captures", "1"])
            let full = scratch + "/full.mov"
            let result = try plugin.record(frames: 40, size: "1280x720", pool: pool, location: full)
            #expect(result.status != 0)
            #expect(result.stderr.contains("storage full"), "\(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: full))
            let status = try TestSupport.run("provideo", ["--pool", pool, "status", "--json"])
            #expect(status.stdout.contains("\"remainingCapacity\" : 4194304"), "\(status.stdout)")

            // Busy: another process is recording into the pool.
            let recorder = try TestSupport.start("provideo", ["--pool", pool, "record", scratch + "/other.mov"],
                                                 stdinPipe: true)
            defer { if recorder.isRunning { recorder.terminate() } }
            let input = (recorder.standardInput as! Pipe).fileHandleForWriting
            try input.write(contentsOf: Data(TestSupport.pattern(1000, seed: 3)))
            for _ in 0..<100 {
                if try TestSupport.run("provideo", ["--pool", pool, "status", "--json"]).stdout.contains("\"capturing\"") { break }
                usleep(50_000)
            }
            let busy = try plugin.record(frames: 5, pool: pool, location: scratch + "/busy.mov")
            #expect(busy.status != 0)
            #expect(busy.stderr.contains("the pool is busy (capturing)"), "\(busy.stderr)")
            #expect(!FileManager.default.fileExists(atPath: scratch + "/busy.mov"))
            try input.close()
            recorder.waitUntilExit()
            #expect(recorder.terminationStatus == 0)
        }
    }
}

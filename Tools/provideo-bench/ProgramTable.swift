import CommandLineSupport
import ProVideoStorage

/// provideo-bench's commands, one entry each: `--help`, `help COMMAND`, the man page and the
/// shell completions come from this table. The measurement runs when no command is named.
let program = ProgramDescription(
    name: "provideo-bench",
    summary: "measure how Pro Video Storage pools hold real-time video streams against write(2) and O_DIRECT",
    globalOptions: [
        OptionDescription("--pool", "PATH", "the pool every stream records into (else $PROVIDEO_POOL, else "
                          + "\(Pool.defaultPath); a scratch pool under /var/tmp when none is there or it is too small)"),
    ],
    commands: [
        CommandDescription("measure", summary: "simulated recorders deliver frames on a real-time clock into the pool (pool), "
                           + "with write(2) to a new file (buffered) or with O_DIRECT appends (direct)", options: [
            OptionDescription("--streams", "N", "concurrent recorders (default 1)"),
            OptionDescription("--codec", "NAME", "the streams' bitrate and frame rate from the codec table (`provideo codecs`); "
                              + "--bitrate and --fps override them", choices: CodecTable.all.map(\.name)),
            OptionDescription("--bitrate", "RATE", "each stream's bitrate (880M = 880,000,000 bit/s); scales --frame-trace"),
            OptionDescription("--fps", "FPS", "frames per second (25, 29.97 or 30000/1001; default the codec's, else 25)"),
            OptionDescription("--duration", "SECONDS", "how long each run lasts", required: true),
            OptionDescription("--frame-trace", "FILE", "frame sizes in bytes, one a line"),
            OptionDescription("--mode", "MODE", "which writers run (default all)", choices: ["pool", "buffered", "direct", "mount", "all"]),
            OptionDescription("--noise", "NOISE", "a noisy neighbour beside the recorders: a page-cache writer, or a take "
                              + "landing with `provideo land`'s code", choices: ["none", "writer", "land"]),
            OptionDescription("--land-to", "DIR", "with --noise land: where the take lands (another filesystem, e.g. a "
                              + "GlusterFS mount)"),
            OptionDescription("--land-size", "SIZE", "with --noise land: the landing take's size (default 4G)"),
            OptionDescription("--repeat", "K", "runs of each mode, alternated (default 1)"),
            OptionDescription("--input-queue", "FRAMES", "frames a recorder holds before dropping (default 2)"),
            OptionDescription("--buffer-budget", "SIZE", "the capture's buffers (default three seconds of the bitrate)"),
            .flag("--in-place", "pool mode fills the capture's buffers in place (Capture.append(count:filling:))"),
            OptionDescription("--realtime", "PRIORITY", "every mode's recorder threads run under SCHED_FIFO at PRIORITY "
                              + "(1-99), as a capture application's input thread does (needs root or RLIMIT_RTPRIO)"),
            .flag("--json", "print the report as JSON"),
            OptionDescription("--plot", "FILE.svg", "draw the append latencies of each mode's first run"),
        ], isDefault: true),
        CommandDescription("size", summary: "how many concurrent streams of a codec the pool records with no dropped frame: "
                           + "trials bisected from the pool's sustained bandwidth, each past the device's write cache", options: [
            OptionDescription("--codec", "NAME", "the streams' codec (`provideo codecs` lists them: prores-422-hq-2160p29.97)",
                              choices: CodecTable.all.map(\.name)),
            OptionDescription("--bitrate", "RATE", "instead of --codec: each stream's bitrate (880M = 880,000,000 bit/s)"),
            OptionDescription("--fps", "FPS", "with --bitrate: frames per second (29.97 or 30000/1001; default 25)"),
            OptionDescription("--streams-min", "N", "the fewest streams tried (default 1)"),
            OptionDescription("--streams-max", "N", "the most streams tried (default: twice what the sustained bandwidth "
                              + "carries, and what the pool holds)"),
            OptionDescription("--noise", "NOISE", "a noisy neighbour during every trial (default none)", choices: ["none", "writer", "land"]),
            OptionDescription("--land-to", "DIR", "with --noise land: where the take lands (another filesystem)"),
            OptionDescription("--minutes", "M", "each trial's shortest length (default 0.5), then until the device's write "
                              + "rate is steady (two 10-s windows within 10 %), at most 3 x M + 1 min"),
            OptionDescription("--confirm-minutes", "M", "then the answer runs this long (default 5; 0: no confirmation); "
                              + "a drop halves it until one holds, then one fewer after a drop in the last 3/4, else halfway; "
                              + "at most 4 times"),
            OptionDescription("--budget-minutes", "M", "start no confirmation after the first that would end (with 20 s "
                              + "to set up and settle) past M minutes from the start (default 15; 0: no limit)"),
            OptionDescription("--realtime", "PRIORITY", "the recorder threads' SCHED_FIFO priority (1-99), or off "
                              + "(default 50 where the process may, else off)"),
            OptionDescription("--input-queue", "FRAMES", "frames the recorder holds between its capture card and its "
                              + "writer before the card overwrites one (default 2; Docs/BENCHMARKS.md says why)"),
            .flag("--json", "print the report as JSON"),
            OptionDescription("--plot", "FILE.svg", "draw the append latencies of the answer's trial and of the first "
                              + "number that failed"),
        ]),
        CommandDescription("calibrate", summary: "unthrottled sequential write bandwidth of the engine into the pool's "
                           + "reserve, raw and durable (size streams against the durable one)", options: [
            .flag("--fio", "run fio (io_uring, direct, same block size, queue depth and file) alternately"),
            .flag("--fio-hugetlb", "as --fio, with hugetlb pages for fio's buffers (needs vm.nr_hugepages)"),
            OptionDescription("--size", "SIZE", "bytes per pass (default 8G, or what the reserve holds)"),
            OptionDescription("--write-size", "SIZE", "bytes per write (default 4M)"),
            OptionDescription("--queue-depth", "N", "writes in flight (default 16)"),
            OptionDescription("--durability", "SECONDS", "the durable side's commit interval (default 1)"),
            OptionDescription("--repeat", "K", "passes (default 5)"),
            .flag("--json", "print the report as JSON"),
        ]),
    ],
    notes: [
        "RATE: bits per second with SI suffixes (880M = 880,000,000 bit/s). SIZE: bytes, K/M/G/T (1024-based) or KB/MB/GB/TB.",
    ],
    exitStatus: [.init("0", "ok"), .init("1", "the benchmark failed"), .init("2", "usage error")],
    environment: [
        .init("PROVIDEO_POOL", "the pool's directory when --pool is not given (default /var/lib/provideo)"),
        .init("PROVIDEO_BIN", "the provideo program --mode mount runs (default: beside this program, else from PATH)"),
    ],
    seeAlso: ["provideo(1)", "fio(1)", "stress-ng(1)"])

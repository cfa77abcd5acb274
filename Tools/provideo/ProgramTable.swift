import CommandLineSupport
import ProVideoStorage

/// Every `provideo` command, one entry each: `--help`, `help COMMAND`, the man page and the
/// shell completions come from this table.
let program = ProgramDescription(
    name: "provideo",
    summary: "administer a Pro Video Storage pool: a preallocated reserve that recorders capture into",
    globalOptions: [
        OptionDescription("--pool", "PATH", "the pool's directory (else $PROVIDEO_POOL, else \(Pool.defaultPath))"),
    ],
    commands: [
        CommandDescription("create", summary: "create a pool with a reserve of SIZE; members of NAME may use it", options: [
            OptionDescription("--capacity", "SIZE", "the reserve's size (64G, 1.5T, 512MiB, 10GB)",
                              required: true),
            .flag("--zero", "write zeros over the whole reserve once (slow; some filesystems need it)"),
            OptionDescription("--group", "NAME", "the group whose members may use the pool (default: your group)"),
            OptionDescription("--max-captures", "N", "how many captures may run at once (default: no limit; 1: one at a "
                              + "time, as Apple's AVProVideoStorage)"),
            OptionDescription("--bandwidth", "RATE", "the durable write bandwidth captures are admitted against "
                              + "(default: measured until the rate settles, at most 120 s)"),
            .flag("--force", "create it even under a mount point /etc/fstab names whose filesystem is not mounted "
                  + "(the pool then takes the filesystem beneath)"),
            .flag("--json", "print the new pool's path, capacity and bandwidth as JSON"),
        ]),
        CommandDescription("status", summary: "capacity, remaining capacity, busy reasons, filesystem, alignment, I/O scheduler, engine", options: [
            .flag("--json", "print the status as JSON (sizes in bytes)"),
            .flag("--bytes", "show byte counts beside the rounded sizes"),
            .flag("-H", "print the status as one row for scripts (PATH CAPACITY REMAINING ALLOCATED BUSY CAPTURES DECLARED "
                  + "ADMISSIBLE READONLY FILESYSTEM ENGINE, then TIMELEFT with --bitrate or --codec): tab-separated, no header"),
            .flag("-p", "print that row with exact numbers: bytes, bit/s, seconds (-Hp as `zpool list -Hp`)"),
            OptionDescription("--bitrate", "RATE", "show the recording time left at RATE (880M = 880,000,000 bit/s)"),
            OptionDescription("--codec", "NAME", "show the recording time left at a codec's rate (`provideo codecs` lists them)",
                              choices: CodecTable.all.map(\.name)),
            OptionDescription("--watch", "SECONDS", "show the status again every SECONDS (default 1) with each capture's rate, "
                              + "until q (on a terminal) or Ctrl-C", valueOptional: true),
        ]),
        CommandDescription("resize", arguments: "SIZE", summary: "set the capacity and grow or shrink the reserve", options: [
            .flag("--json", "print the new capacity as JSON"),
        ]),
        CommandDescription("replenish", summary: "restore the reserve toward the capacity, best effort", options: [
            .flag("--json", "print what was added and what is still missing as JSON"),
        ]),
        CommandDescription("destroy", summary: "remove the pool and its reserve", options: [
            .flag("--json", "print what was removed as JSON"),
        ]),
        CommandDescription("record", arguments: "DEST", summary: "capture standard input into the pool, then move it to DEST", options: [
            OptionDescription("--bitrate", "RATE", "the input's expected bitrate (880M = 880,000,000 bit/s)"),
            OptionDescription("--overrun", "POLICY", "when the disk falls behind: wait for it, or fail (drop the read)",
                              choices: ["wait", "fail"]),
            OptionDescription("--durability", "SECONDS", "how often what was received is made crash-safe (default 1)"),
            .flag("--force", "start even when the running captures and this one exceed the pool's admissible bandwidth"),
            OptionDescription("--land", "WHEN", "a destination on another filesystem: copy it in finish, or land it in the "
                              + "background (`provideo land`); auto (default): in the background for network filesystems",
                              choices: ["auto", "finish", "background"]),
            .flag("--replenish", "afterwards, refill the reserve from free space for the take's share (as `provideo replenish`)"),
            .flag("--json", "print the summary as JSON"),
        ]),
        CommandDescription("demo", summary: "record a generated ProRes 422 HQ clip end to end", options: [
            OptionDescription("--seconds", "N", "the clip's length (default 3)"),
            .flag("--json", "print the pool, the clip, its length, the frames decoded and expected, and the remaining capacity before and after as JSON"),
        ]),
        CommandDescription("recover", summary: "salvage captures of recorders that died", options: [
            OptionDescription("--salvage-to", "DIR", "place captures whose journal is unreadable in DIR as <id>.salvaged"),
            .flag("--json", "print what was salvaged and discarded as JSON"),
        ]),
        CommandDescription("list", summary: "recordings the pool holds, and the captures in progress", options: [
            .flag("--json", "print the listing as JSON"),
            .flag("-H", "print a row for scripts per item (TYPE NAME DESTINATION SIZE DONE; TYPE capture, held, landing or "
                  + "recovered): tab-separated, no header"),
            .flag("-p", "print those rows with exact byte counts (-Hp as `zpool list -Hp`)"),
        ]),
        CommandDescription("move", arguments: "HELD [DEST]",
                           summary: "move a recording the pool holds to its destination (or DEST)", options: [
            .flag("--json", "print where the recording went as JSON"),
        ]),
        CommandDescription("check", summary: "verify the pool's accounting against the disk", options: [
            .flag("--json", "print the problems found as JSON (exit status 1 when there are any)"),
        ]),
        CommandDescription("mount", arguments: "MOUNTPOINT",
                           summary: "show DIR at MOUNTPOINT; files created there are captures that land in DIR", options: [
            OptionDescription("--destination", "DIR", "the directory the mount shows and its recordings land in",
                              required: true),
            OptionDescription("--bitrate", "RATE", "each file's expected bitrate (default 100M = 100,000,000 bit/s)"),
            OptionDescription("--land", "WHEN", "a DIR on another filesystem: copy each file at its close, or land it in "
                              + "the background (`provideo land`)", choices: ["auto", "finish", "background"]),
            .flag("--allow-other", "let every user write there, each as themself (root only; members of the pool's group)"),
            .flag("--foreground", "stay in the foreground (for a service or a terminal)"),
            .flag("--json", "print each event (a take landed, a capture failed, an open refused) as one JSON object per "
                  + "line on standard output; stays in the foreground"),
        ]),
        CommandDescription("land", summary: "land the recordings waiting in the pool at their destinations "
                           + "(idle I/O priority, resumable, verified)", options: [
            .flag("--watch", "keep going: land new takes as they finish, retry failures (for a service)"),
            OptionDescription("--parallel", "N", "transfers at once (default 1)"),
            OptionDescription("--rate", "RATE", "cap each transfer at RATE (880M = 880,000,000 bit/s)"),
            OptionDescription("--fleet", "FILE", "share a landing budget with other servers: FILE on the shared store holds "
                              + "one lock per slot (Docs/FLEET.md)"),
            OptionDescription("--slots", "N", "with --fleet, transfers the whole fleet runs at once (default 1)"),
            OptionDescription("--fleet-rate", "RATE", "with --fleet, the rate the whole fleet's transfers write at together, "
                              + "shared evenly among them"),
            OptionDescription("--retry", "SECONDS", "first back-off after a failure, doubling up to 5 minutes"),
            OptionDescription("--interval", "SECONDS", "with --watch, how often to look for new takes"),
            .flag("--json", "print what landed and what failed as a JSON list (with --watch, one object per line)"),
        ]),
        CommandDescription("set-bandwidth", arguments: "RATE|none",
                           summary: "set the bandwidth captures are admitted against (80% of it), or none", options: [
            .flag("--json", "print the bandwidth and the admissible bitrate as JSON (bits per second; null for none)"),
        ]),
        CommandDescription("measure-bandwidth", summary: "measure the pool's durable write bandwidth until it settles, and set it", options: [
            .flag("--json", "print the burst and sustained rates (bit/s), bytes, seconds and whether it settled as JSON"),
        ]),
        CommandDescription("metrics", summary: "the pool's state in the Prometheus text format (node_exporter's textfile collector)",
                           options: [
            OptionDescription("--output", "FILE", "write FILE atomically instead of standard output (e.g. FILE.prom in the collector's directory)"),
            .flag("--json", "print the samples as JSON: each one's name, labels and value (a string, as in the text format)"),
        ]),
        CommandDescription("codecs", summary: "the codec names status --codec takes, with their data rates", options: [
            .flag("--json", "print the table as JSON"),
        ]),
    ],
    notes: [
        "SIZE: bytes, K/M/G/T (1024-based, \"iB\" optional) or KB/MB/GB/TB (1000-based).",
        "RATE: bits per second with SI suffixes (880M = 880,000,000 bit/s).",
    ],
    exitStatus: [
        .init("0", "ok"),
        .init("1", "the operation failed (the message on standard error says why and what to do)"),
        .init("2", "usage error"),
    ],
    environment: [
        .init("PROVIDEO_POOL", "the pool's directory when --pool is not given (default /var/lib/provideo)"),
        .init("PROVIDEO_MOUNT_DEBUG", "slow: the mount's daemon logs each write request it took over 20 ms on"),
    ],
    files: [
        .init("/var/lib/provideo", "the default pool: pool.json (its settings), reserve (the preallocated storage), "
              + "captures/ (takes being recorded), recordings/ (takes held in the pool)"),
        .init("/etc/fstab", "read by create and status: a pool under a mount point whose filesystem is not mounted is refused"),
    ],
    seeAlso: ["provideo-bench(1)", "fallocate(2)", "io_uring(7)", "fuse(8)", "systemd.service(5)"])

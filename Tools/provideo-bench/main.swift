import BenchKit
import CommandLineSupport
import Foundation
import ProVideoStorage

let usage = """
usage: provideo-bench [--pool PATH]... --streams N --bitrate RATE --fps FPS --duration SECONDS
                      [--frame-trace FILE] [--mode pool|buffered|direct|all] [--noise none|writer|land]
                      [--land-to DIR] [--land-size SIZE]
                      [--repeat K] [--input-queue FRAMES] [--buffer-budget SIZE] [--in-place]
                      [--json] [--plot FILE.svg]
       provideo-bench [--pool PATH] calibrate [--fio|--fio-hugetlb] [--size SIZE] [--write-size SIZE]
                      [--queue-depth N] [--durability SECONDS] [--repeat K] [--json]
Simulated recorders deliver frames on a real-time clock and write them into the pool (pool),
with write(2) to a new file (buffered) or with O_DIRECT appends to a new file (direct).
RATE is per stream, in bits per second with SI suffixes (880M = 880,000,000 bit/s); with
--frame-trace (one frame size in bytes per line) it is optional and scales the trace.
--in-place: pool mode hands each frame's place in the capture's buffers to the recorder
(Capture.append(count:filling:)), as an encoder or capture card writing there would: no copy.
--noise land: a take of --land-size bytes (default 4G) waits in a scratch pool on the same
filesystem and a separate process lands it in --land-to DIR (another filesystem, e.g. a GlusterFS
mount) with `provideo land`'s code while the modes run.
Pool mode needs one pool per stream: repeat --pool. The pool is --pool PATH, else
$PROVIDEO_POOL, else \(Pool.defaultPath); when none exists there, scratch pools are created
under /var/tmp and destroyed afterwards.
calibrate: unthrottled sequential write bandwidth of the engine into the pool's reserve, raw
(no durability commit) and durable (a commit every --durability seconds, default 1, as a
recording does: size streams against this one); --fio runs fio (io_uring, direct, same block
size, queue depth and file) alternately with the raw side; --fio-hugetlb gives fio's buffers
hugetlb pages (needs vm.nr_hugepages), as ours sit on transparent huge pages.
Exit status: 0 ok, 1 the benchmark failed, 2 usage error.
"""

func log(_ line: String) { CommandLineProgram.printError(line) }

CommandLineProgram.run(usage: usage) {
    var arguments = Arguments(Array(CommandLine.arguments.dropFirst()))
    if arguments.flag("--help") || arguments.flag("-h") {
        print(usage)
        return
    }
    var pools: [String] = []
    while let pool = try arguments.option("--pool") { pools.append(pool) }
    if pools.isEmpty, let environment = ProcessInfo.processInfo.environment["PROVIDEO_POOL"], !environment.isEmpty {
        pools = [environment]
    }
    // Commands are matched as whole words: options with values may come first.
    if arguments.flag("noise-writer") {
        try BenchCommands.noiseWriter(&arguments)
    } else if arguments.flag("land-neighbour") {
        try BenchCommands.landNeighbour(&arguments)
    } else if arguments.flag("calibrate") {
        Interruption.install()
        try BenchCommands.calibrate(pools, &arguments)
    } else {
        Interruption.install()
        try BenchCommands.measure(pools, &arguments)
    }
}

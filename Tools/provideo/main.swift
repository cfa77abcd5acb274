import CommandLineSupport
import Foundation
import ProVideoStorage

let usage = """
usage: provideo [--pool PATH] COMMAND
  create --capacity SIZE [--zero] [--group NAME]
                                    create a pool with a reserve of SIZE (64G, 512MiB, 10GB);
                                    members of NAME may use it (default: your group)
  status [--json]                   capacity, busy reasons, filesystem, alignment, engine
  resize SIZE                       set the capacity and grow or shrink the reserve
  replenish                         restore the reserve toward the capacity, best effort
  destroy                           remove the pool and its reserve
  record DEST [--bitrate RATE] [--overrun wait|fail] [--durability SECONDS] [--land auto|finish|background]
                                    capture standard input into the pool, then move it to DEST
                                    (another filesystem: in finish, or landing in the background;
                                    auto: in the background for network filesystems)
  demo                              record a generated ProRes 422 HQ clip end to end
  recover                           salvage captures of recorders that died
  list [--json]                     recordings the pool holds, and the capture in progress
  move HELD [DEST]                  move a recording the pool holds to its destination (or DEST)
  check                             verify the pool's accounting against the disk
  land [--watch] [--parallel N] [--rate RATE] [--retry SECONDS] [--interval SECONDS] [--json]
                                    land the recordings waiting in the pool at their destinations
                                    (idle I/O priority, resumable, verified); --watch keeps going
The pool is --pool PATH, else $PROVIDEO_POOL, else \(Pool.defaultPath).
SIZE: bytes, K/M/G/T (1024-based, "iB" optional) or KB/MB/GB/TB (1000-based).
RATE: bits per second with SI suffixes (880M = 880,000,000 bit/s).
Exit status: 0 ok, 1 the operation failed, 2 usage error.
"""

CommandLineProgram.run(usage: usage) {
    var arguments = Arguments(Array(CommandLine.arguments.dropFirst()))
    if arguments.flag("--help") || arguments.flag("-h") {
        print(usage)
        return
    }
    let poolOption = try arguments.option("--pool")
    if poolOption?.isEmpty == true { throw UsageError("--pool needs a directory; it was empty") }
    let poolPath = Pool.resolvePath(poolOption)
    let command = try arguments.positional("a command")
    switch command {
    case "create": try Commands.create(poolPath, &arguments)
    case "status": try Commands.status(poolPath, &arguments)
    case "resize": try Commands.resize(poolPath, &arguments)
    case "replenish": try Commands.replenish(poolPath, &arguments)
    case "destroy": try Commands.destroy(poolPath, &arguments)
    case "record": try Commands.record(poolPath, &arguments)
    case "demo": try Demo.run(poolPath, &arguments)
    case "recover": try Commands.recover(poolPath, &arguments)
    case "list": try Commands.list(poolPath, &arguments)
    case "move": try Commands.move(poolPath, &arguments)
    case "check": try Commands.check(poolPath, &arguments)
    case "land": try LandCommand.run(poolPath, &arguments)
    default: throw UsageError("unknown command '\(command)'")
    }
}

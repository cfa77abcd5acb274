import CommandLineSupport
import ProVideoStorage

CommandLineProgram.run(program) { arguments in
    let poolOption = try arguments.option("--pool")
    if poolOption?.isEmpty == true { throw UsageError("--pool needs a directory; it was empty") }
    let poolPath = Pool.resolvePath(poolOption)
    let command = try arguments.positional("a command; `provideo help` lists them")
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
    case "mount": try MountCommand.run(poolPath, &arguments)
    case "set-bandwidth": try Captures.setBandwidth(poolPath, &arguments)
    case "measure-bandwidth": try Captures.measureBandwidth(poolPath, &arguments)
    case "codecs": try Commands.codecs(&arguments)
    case "metrics": try Commands.metrics(poolPath, &arguments)
    default: throw UsageError("unknown command '\(command)'; `provideo help` lists them")
    }
}

import BenchKit
import CommandLineSupport
import Foundation
import ProVideoStorage


func log(_ line: String) { CommandLineProgram.printError(line) }

CommandLineProgram.run(program) { arguments in
    var pools: [String] = []
    while let pool = try arguments.option("--pool") { pools.append(pool) }
    if pools.isEmpty, let environment = ProcessInfo.processInfo.environment["PROVIDEO_POOL"], !environment.isEmpty {
        pools = [environment]
    }
    // Commands are matched as whole words: options with values may come first.
    if arguments.flag("noise-writer") {
        try BenchCommands.noiseWriter(&arguments)
    } else if arguments.flag("calibrate") {
        Interruption.install()
        try BenchCommands.calibrate(pools, &arguments)
    } else {
        _ = arguments.flag("measure")
        Interruption.install()
        try BenchCommands.measure(pools, &arguments)
    }
}

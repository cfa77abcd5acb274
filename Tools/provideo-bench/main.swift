import BenchKit
import CommandLineSupport
import Foundation
import ProVideoStorage


func log(_ line: String) { CommandLineProgram.printError(line) }

CommandLineProgram.run(program) { arguments in
    var pool = try arguments.option("--pool")
    if pool == nil, let environment = ProcessInfo.processInfo.environment["PROVIDEO_POOL"], !environment.isEmpty {
        pool = environment
    }
    // Commands are matched as whole words: options with values may come first.
    if arguments.flag("noise-writer") {
        try BenchCommands.noiseWriter(&arguments)
    } else if arguments.flag("land-neighbour") {
        try BenchCommands.landNeighbour(&arguments)
    } else if arguments.flag("size") {
        Interruption.install()
        try BenchCommands.size(pool, &arguments)
    } else if arguments.flag("calibrate") {
        Interruption.install()
        try BenchCommands.calibrate(pool, &arguments)
    } else {
        _ = arguments.flag("measure")
        Interruption.install()
        try BenchCommands.measure(pool, &arguments)
    }
}

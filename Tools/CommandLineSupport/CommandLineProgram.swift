import Foundation
import ProVideoStorage

/// Running a command-line program: exit codes 0 (ok), 1 (operation failed), 2 (usage).
public enum CommandLineProgram {
    /// Answers `--version`, `help [COMMAND]`, `help --man`, `help --completion bash|zsh`,
    /// `--help` and `COMMAND --help` from `program`, else runs `body`; prints errors to
    /// standard error after the program's name and exits with the matching status.
    public static func run(_ program: ProgramDescription, _ body: (inout Arguments) throws -> Void) -> Never {
        do {
            var arguments = Arguments(Array(CommandLine.arguments.dropFirst()))
            if let text = try builtInAnswer(program, &arguments) {
                print(text)
            } else {
                try body(&arguments)
            }
            exit(0)
        } catch let error as UsageError {
            // The one line that says what was wrong, not buried under the whole usage text.
            printError("\(program.name): \(error.description)\nsee `\(program.name) --help`")
            exit(2)
        } catch let error as ProVideoError {
            printError("\(program.name): \(error.message)")
            exit(1)
        } catch {
            printError("\(program.name): \(error)")
            exit(1)
        }
    }

    /// What `--version` and the help forms print; nil when the words ask for something else.
    static func builtInAnswer(_ program: ProgramDescription, _ arguments: inout Arguments) throws -> String? {
        let words = arguments.remaining
        if words.contains("--version") { return "\(program.name) \(ProVideoStorageVersion.current)" }
        if words.first == "help" {
            _ = arguments.flag("help")
            if arguments.flag("--man") { return program.manPage }
            if let shell = try arguments.option("--completion") { return try program.completion(shell) }
            let name = arguments.remaining.first
            if name != nil { _ = try arguments.positional("COMMAND") }
            try arguments.finish()
            return try program.helpText(for: name)
        }
        guard words.contains("--help") || words.contains("-h") else { return nil }
        let command = words.lazy.compactMap(program.command(named:)).first
        return command.map(program.help) ?? program.usage
    }

    public static func printError(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    /// Prints `value` as one JSON object with sorted keys.
    public static func printJSON<T: Encodable>(_ value: T) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        print(String(decoding: try encoder.encode(value), as: UTF8.self))
    }
}

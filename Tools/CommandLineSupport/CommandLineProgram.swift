import Foundation
import ProVideoStorage

/// Running a command-line program: exit codes 0 (ok), 1 (operation failed), 2 (usage).
public enum CommandLineProgram {
    /// Answers `--version`, `help [--json] [COMMAND]`, `help --man`, `help --completion bash|zsh`,
    /// `--help` and `COMMAND --help` from `program`, else runs `body`; prints errors to
    /// standard error after the program's name and exits with the matching status. A command
    /// run with `--json` that fails before printing its JSON also prints one JSON error object on
    /// standard output (`ErrorReport`), as `zpool -j` and `lsblk -J` do.
    public static func run(_ program: ProgramDescription, _ body: (inout Arguments) throws -> Void) -> Never {
        let words = Array(CommandLine.arguments.dropFirst())
        do {
            var arguments = Arguments(words)
            if let text = try builtInAnswer(program, &arguments) {
                print(text)
            } else {
                try body(&arguments)
            }
            exit(0)
        } catch let error as UsageError {
            // The one line that says what was wrong, not buried under the whole usage text.
            fail(ErrorReport(code: "usage", message: error.description), words,
                 "\(program.name): \(error.description)\nsee `\(program.name) --help`", status: 2)
        } catch let error as ProVideoError {
            // A message may quote a pool member's text (a destination, a journal's field): on
            // standard error it is escaped (`TerminalText`); the JSON report keeps it exact.
            fail(ErrorReport(code: error.code.rawValue, message: error.message, remedies: error.remedies), words,
                 "\(program.name): \(error.advised.terminalSafe)", status: 1)
        } catch {
            fail(ErrorReport(code: "error", message: "\(error)"), words, "\(program.name): \("\(error)".terminalSafe)",
                 status: 1)
        }
    }

    /// What `--json` prints on standard output for a command that failed:
    /// `{"error": {"code": "busy", "message": "…"}}`. `code` is the `ProVideoError` code's name,
    /// or "usage" for a usage error (exit status 2); `remedies`, when the error names any, the
    /// operations that deal with it (`ProVideoError.Remedy`: "replenish", "resize", …).
    struct ErrorReport: Encodable {
        struct Detail: Encodable {
            var code: String
            var message: String
            var remedies: [String]?
        }
        var error: Detail

        init(code: String, message: String, remedies: [ProVideoError.Remedy] = []) {
            error = Detail(code: code, message: message, remedies: remedies.isEmpty ? nil : remedies.map(\.rawValue))
        }
    }

    /// Whether this run printed a JSON document (`printJSON`): a command that printed its report
    /// and then failed (`check` with problems, `record` that dropped frames) prints no second one.
    nonisolated(unsafe) private static var printedJSON = false

    /// The report goes on one line, so that it is also one line of `land --watch --json`'s stream.
    private static func fail(_ report: ErrorReport, _ words: [String], _ message: String, status: Int32) -> Never {
        if words.contains("--json") && !printedJSON {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            if let data = try? encoder.encode(report) { print(String(decoding: data, as: UTF8.self)) }
        }
        printError(message)
        exit(status)
    }

    /// What `--version` and the help forms print; nil when the words ask for something else.
    static func builtInAnswer(_ program: ProgramDescription, _ arguments: inout Arguments) throws -> String? {
        let words = arguments.remaining
        if words.contains("--version") { return "\(program.name) \(ProVideoStorageVersion.current)" }
        if words.first == "help" {
            _ = arguments.flag("help")
            if arguments.flag("--help") || arguments.flag("-h") || arguments.remaining.first == "help" {
                return program.helpForHelp
            }
            if arguments.flag("--man") { return program.manPage }
            if let shell = try arguments.option("--completion") { return try program.completion(shell) }
            let json = arguments.flag("--json")
            let name = arguments.remaining.first
            if name != nil { _ = try arguments.positional("COMMAND") }
            try arguments.finish()
            let text = try program.helpText(for: name)
            guard json else { return text }
            // The same description the text is rendered from: a wrapper's own help or a GUI's
            // form reads it without parsing the text.
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            let data = try name.flatMap(program.command(named:)).map(encoder.encode) ?? encoder.encode(program)
            return String(decoding: data, as: UTF8.self)
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
        printedJSON = true
    }
}

/// `--help` and `help COMMAND`, rendered from the program's description.
extension ProgramDescription {
    /// The synopsis line of `command`: `create --capacity SIZE [--zero] …`.
    public func synopsis(_ command: CommandDescription) -> String {
        let words = [command.isDefault ? "[\(command.name)]" : command.name] + (command.arguments.isEmpty ? [] : [command.arguments])
            + command.options.map { $0.required ? $0.synopsis : "[\($0.synopsis)]" }
        return words.joined(separator: " ")
    }

    /// The whole program's usage: every command with its synopsis and summary, then the notes.
    public var usage: String {
        let global = globalOptions.map { "[\($0.synopsis)]" }.joined(separator: " ")
        let word = commands.contains(where: \.isDefault) ? "[COMMAND]" : "COMMAND"
        var lines = ["usage: \(name) \(global) \(word)", "commands:"]
        for command in commands {
            lines.append("  \(synopsis(command))")
            lines.append("      \(command.summary)")
        }
        lines.append("  help [COMMAND]")
        lines.append("      this text, or one command's options")
        lines += globalOptions.map { "\($0.synopsis): \($0.summary)" }
        lines += notes
        lines.append("Exit status: " + exitStatus.map { "\($0.term) \($0.meaning)" }.joined(separator: ", ") + ".")
        lines.append("\(name) --version prints the version.")
        return lines.joined(separator: "\n")
    }

    /// One command's help: its synopsis, summary and every option.
    public func help(_ command: CommandDescription) -> String {
        let global = globalOptions.map { "[\($0.synopsis)]" }.joined(separator: " ")
        var lines = ["usage: \(name) \(global) \(synopsis(command))", command.summary]
        if !command.options.isEmpty { lines.append("options:") }
        for option in command.options {
            lines.append("  \(option.synopsis)")
            lines.append("      \(option.summary)")
        }
        return lines.joined(separator: "\n")
    }

    /// `help --help` and `help help`: what `help` itself takes.
    public var helpForHelp: String {
        ["usage: \(name) help [--json] [COMMAND]", "the usage, or one command's options (the same as `\(name) COMMAND --help`)",
         "options:", "  --json", "      the commands and their options as JSON (one command's with COMMAND)",
         "  --man", "      the man page", "  --completion bash|zsh", "      a shell completion script"]
            .joined(separator: "\n")
    }

    /// The text for `help [COMMAND]`.
    /// - Throws: `UsageError` for an unknown command, naming the known ones.
    public func helpText(for name: String?) throws -> String {
        guard let name else { return usage }
        guard let command = command(named: name) else {
            throw UsageError("no command '\(name)'; the commands are \(commands.map(\.name).joined(separator: ", "))")
        }
        return help(command)
    }
}

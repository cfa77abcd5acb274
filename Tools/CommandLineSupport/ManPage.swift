import Foundation
import ProVideoStorage

/// The man page (section 1, roff `man` macros), rendered from the program's description.
extension ProgramDescription {
    public var manPage: String {
        var lines = [
            ".TH \(roff(name.uppercased())) 1 \"\" \"\(name) \(ProVideoStorageVersion.current)\" \"User Commands\"",
            ".SH NAME", "\(roff(name)) \\- \(roff(summary))",
            ".SH SYNOPSIS",
        ]
        let global = globalOptions.map { "[\($0.synopsis)]" }.joined(separator: " ")
        for command in commands {
            lines += [".B \(roff(name))", roff("\(global) \(synopsis(command))"), ".br"]
        }
        lines += [".B \(roff(name))", "help [COMMAND] | --version", ".SH COMMANDS"]
        for command in commands {
            lines += [".TP", ".B \(roff(synopsis(command)))", roff(command.summary)]
            for option in command.options {
                lines += [".RS", ".TP", ".B \(roff(option.synopsis))", roff(option.summary), ".RE"]
            }
        }
        lines += [".TP", ".B help [COMMAND]", "the usage, or one command's options",
                  ".TP", ".B help \\-\\-man | help \\-\\-completion bash|zsh",
                  "this page, or a shell completion script (the install step installs them)"]
        if !globalOptions.isEmpty { lines.append(".SH OPTIONS") }
        for option in globalOptions { lines += [".TP", ".B \(roff(option.synopsis))", roff(option.summary)] }
        lines.append(".SH NOTES")
        for note in notes { lines += [".PP", roff(note)] }
        return lines.joined(separator: "\n")
    }

    /// Escapes text for roff: backslashes, hyphens (so `--pool` is not typeset as dashes) and
    /// a leading dot or quote (a request).
    private func roff(_ text: String) -> String {
        let escaped = text.replacingOccurrences(of: "\\", with: "\\e").replacingOccurrences(of: "-", with: "\\-")
        return escaped.hasPrefix(".") || escaped.hasPrefix("'") ? "\\&" + escaped : escaped
    }
}

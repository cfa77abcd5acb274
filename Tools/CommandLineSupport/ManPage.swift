import Foundation
import ProVideoStorage

/// The man page (section 1, roff `man` macros), rendered from the program's description, its
/// sections in the order man-pages(7) gives: NAME, SYNOPSIS, DESCRIPTION, OPTIONS, EXIT
/// STATUS, ENVIRONMENT, FILES, NOTES, SEE ALSO.
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
        lines += [".B \(roff(name))", "help [COMMAND] | --version", ".SH DESCRIPTION", roff(summary) + ".", ".SS Commands"]
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
        lines += section("EXIT STATUS", exitStatus) + section("ENVIRONMENT", environment) + section("FILES", files)
        lines.append(".SH NOTES")
        for note in notes { lines += [".PP", roff(note)] }
        if !seeAlso.isEmpty {
            // "name(section)" as man-pages(7) sets it: the name bold, the section roman.
            let pages = seeAlso.map { page -> String in
                let parts = page.split(separator: "(", maxSplits: 1)
                return ".BR \(roff(String(parts[0]))) (\(roff(String(parts.count > 1 ? parts[1] : ")")))"
            }
            lines += [".SH SEE ALSO"] + pages.enumerated().map { $0.offset < pages.count - 1 ? $0.element + " ," : $0.element }
        }
        return lines.joined(separator: "\n")
    }

    private func section(_ title: String, _ definitions: [Definition]) -> [String] {
        guard !definitions.isEmpty else { return [] }
        return [".SH \(title)"] + definitions.flatMap { [".TP", ".B \(roff($0.term))", roff($0.meaning)] }
    }

    /// Escapes text for roff: backslashes, hyphens (so `--pool` is not typeset as dashes) and
    /// a leading dot or quote (a request).
    private func roff(_ text: String) -> String {
        let escaped = text.replacingOccurrences(of: "\\", with: "\\e").replacingOccurrences(of: "-", with: "\\-")
        return escaped.hasPrefix(".") || escaped.hasPrefix("'") ? "\\&" + escaped : escaped
    }
}

import Foundation
import TestSupport
import Testing

/// `--version`, `help [COMMAND]`, `COMMAND --help`, the man pages and the shell completions of
/// both programs, run as processes: all come from one description of the commands.
@Suite struct HelpTests {
    static let commands = ["create", "status", "resize", "replenish", "destroy", "record", "demo", "recover", "list",
                           "move", "check"]

    @Test(arguments: ["provideo", "provideo-bench"])
    func version(_ tool: String) throws {
        let result = try TestSupport.run(tool, ["--version"])
        #expect(result.status == 0 && result.stdout == "\(tool) 1.1.0\n" && result.stderr.isEmpty, "\(result)")
    }

    @Test(arguments: ["provideo", "provideo-bench"])
    func helpIsTheUsage(_ tool: String) throws {
        let help = try TestSupport.run(tool, ["help"])
        let dashed = try TestSupport.run(tool, ["--help"])
        #expect(help.status == 0 && dashed.status == 0)
        #expect(help.stdout == dashed.stdout)
        let command = tool == "provideo" ? "COMMAND" : "[COMMAND]"  // the bench measures when none is named
        #expect(help.stdout.hasPrefix("usage: \(tool) [--pool PATH] \(command)\n"), "\(help.stdout)")
    }

    /// `help COMMAND` and `COMMAND --help` print the same text: the command's synopsis and
    /// every option.
    @Test(arguments: commands)
    func commandHelp(_ command: String) throws {
        let help = try TestSupport.run("provideo", ["help", command])
        let dashed = try TestSupport.run("provideo", ["--pool", "/nonexistent", command, "--help"])
        #expect(help.status == 0 && dashed.status == 0, "\(help) \(dashed)")
        #expect(help.stdout == dashed.stdout)
        #expect(help.stdout.hasPrefix("usage: provideo [--pool PATH] \(command)"), "\(help.stdout)")
        let usage = try TestSupport.run("provideo", ["help"]).stdout
        let synopsis = help.stdout.split(separator: "\n")[0].dropFirst("usage: provideo [--pool PATH] ".count)
        #expect(usage.contains("\n  \(synopsis)\n"), "the usage lacks `\(synopsis)`")
    }

    /// `help --help` and `help help` describe `help` itself (they were usage errors, exit 2).
    @Test(arguments: [["help", "--help"], ["help", "help"], ["help", "-h"]])
    func helpOfHelp(_ words: [String]) throws {
        let result = try TestSupport.run("provideo", words)
        #expect(result.status == 0 && result.stderr.isEmpty, "\(result)")
        #expect(result.stdout.hasPrefix("usage: provideo help [--json] [COMMAND]\n") && result.stdout.contains("--completion bash|zsh"),
                "\(result.stdout)")
    }

    /// `help --json` is the description the text comes from (it was "missing COMMAND", exit 2):
    /// every command with its options, or one command's with its name.
    @Test func helpAsJSON() throws {
        let all = try TestSupport.run("provideo", ["help", "--json"])
        #expect(all.status == 0 && all.stderr.isEmpty, "\(all)")
        let program = try #require(try JSONSerialization.jsonObject(with: Data(all.stdout.utf8)) as? [String: Any], "\(all.stdout)")
        let names = (program["commands"] as? [[String: Any]])?.compactMap { $0["name"] as? String } ?? []
        #expect(program["name"] as? String == "provideo" && Set(Self.commands).isSubset(of: names), "\(names)")
        let create = try TestSupport.run("provideo", ["help", "--json", "create"])
        let command = try #require(try JSONSerialization.jsonObject(with: Data(create.stdout.utf8)) as? [String: Any], "\(create)")
        let options = (command["options"] as? [[String: Any]]) ?? []
        let capacity = options.first { $0["name"] as? String == "--capacity" }
        #expect(command["name"] as? String == "create" && capacity?["value"] as? String == "SIZE"
                && capacity?["required"] as? Bool == true, "\(create.stdout)")
        let unknown = try TestSupport.run("provideo", ["help", "--json", "nosuch"])
        #expect(unknown.status == 2 && unknown.stdout.contains("\"usage\""), "\(unknown)")
    }

    /// The README's CLI block is the usage's synopses, one a line.
    @Test func readmeListsEveryCommandAsHelpDoes() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path
        let readme = try String(contentsOfFile: root + "/README.md", encoding: .utf8)
        let section = try #require(readme.components(separatedBy: "## The admin CLI\n").dropFirst().first)
        let block = try #require(section.components(separatedBy: "```\n").dropFirst().first)
        let usage = try TestSupport.run("provideo", ["help"]).stdout
        let synopses = usage.split(separator: "\n").filter { $0.hasPrefix("  ") && !$0.hasPrefix("   ") }
            .map { line -> String in
                let words = line.dropFirst(2)
                return words.hasPrefix("help") ? "provideo \(words)" : "provideo [--pool PATH] \(words)"
            }
        #expect(block == (synopses + ["provideo --version"]).joined(separator: "\n") + "\n", "README:\n\(block)")
    }

    @Test func createHelpListsItsOptions() throws {
        let help = try TestSupport.run("provideo", ["create", "--help"]).stdout
        #expect(help.hasPrefix("usage: provideo [--pool PATH] create --capacity SIZE [--zero] [--group NAME] [--max-captures N] "
                               + "[--bandwidth RATE] [--force] [--json]\n"), "\(help)")
        #expect(help.contains("\n  --group NAME\n      the group whose members may use the pool"), "\(help)")
    }

    @Test func benchCommandHelp() throws {
        let help = try TestSupport.run("provideo-bench", ["calibrate", "--help"])
        #expect(help.status == 0 && help.stdout.hasPrefix("usage: provideo-bench [--pool PATH] calibrate [--fio]"), "\(help)")
        #expect(help.stdout.contains("\n  --write-size SIZE\n"))
        let measure = try TestSupport.run("provideo-bench", ["help", "measure"])
        #expect(measure.stdout.hasPrefix("usage: provideo-bench [--pool PATH] [measure] [--streams N] [--codec NAME] [--bitrate RATE] [--fps FPS] --duration SECONDS"),
                "\(measure.stdout)")
    }

    /// Usage and operation errors share the program's prefix; an unknown command names the
    /// known ones.
    @Test func unknownCommandAndErrorsArePrefixed() throws {
        let unknown = try TestSupport.run("provideo", ["help", "nope"])
        #expect(unknown.status == 2 && unknown.stdout.isEmpty)
        #expect(unknown.stderr.hasPrefix("provideo: no command 'nope'; the commands are create, status,"), "\(unknown.stderr)")
        let missing = try TestSupport.run("provideo", ["--pool", "/nonexistent/pool", "status"])
        #expect(missing.status == 1 && missing.stderr.hasPrefix("provideo: "), "\(missing.stderr)")
        let none = try TestSupport.run("provideo", [])
        #expect(none.status == 2 && none.stderr.hasPrefix("provideo: missing a command"), "\(none.stderr)")
    }

    /// The man page is valid roff (groff warns about nothing) and documents every command.
    @Test(arguments: ["provideo", "provideo-bench"])
    func manPage(_ tool: String) throws {
        try TestSupport.withScratch("man-\(tool)") { dir in
            let page = try TestSupport.run(tool, ["help", "--man"])
            #expect(page.status == 0 && page.stdout.hasPrefix(".TH \(tool.uppercased().replacingOccurrences(of: "-", with: "\\-")) 1"))
            try page.stdout.write(toFile: dir + "/page.1", atomically: true, encoding: .utf8)
            let groff = try TestSupport.run("/usr/bin/groff", ["-man", "-ww", "-z", dir + "/page.1"])
            #expect(groff.status == 0 && groff.stderr.isEmpty, "groff: \(groff.stderr)")
            let text = try TestSupport.shell("MANWIDTH=200 man -l \(dir)/page.1 2>/dev/null | col -b")
            let names = tool == "provideo" ? Self.commands : ["calibrate", "--streams", "--fio-hugetlb"]
            for name in names { #expect(text.contains(name), "the man page lacks \(name)") }
            // man-pages(7)'s sections, in its order.
            let sections = ["NAME", "SYNOPSIS", "DESCRIPTION", "EXIT STATUS", "ENVIRONMENT"]
                + (tool == "provideo" ? ["FILES"] : []) + ["NOTES", "SEE ALSO"]
            let starts = sections.map { text.range(of: "\n\($0)\n")?.lowerBound }
            #expect(!starts.contains(nil) && starts.map { $0! } == starts.map { $0! }.sorted(), "sections \(sections) in \(text)")
            #expect(text.contains("PROVIDEO_POOL") && text.contains("usage error"), "\(text)")
        }
    }

    /// bash completes command words, a command's options and an option's choices.
    @Test(arguments: [
        ("provideo cre", "create"), ("provideo record --over", "--overrun"), ("provideo record --overrun ", "wait fail"),
        ("provideo --pool /tmp sta", "status"), ("provideo help rec", "record recover"),
        ("provideo-bench cal", "calibrate"), ("provideo-bench --mode p", "pool"),
        ("provideo status --codec prores-422-hq-2160p29", "prores-422-hq-2160p29.97"),
    ])
    func bashCompletion(_ line: String, _ expected: String) throws {
        try TestSupport.withScratch("bash-completion") { dir in
            let tool = String(line.split(separator: " ")[0])
            let script = try TestSupport.run(tool, ["help", "--completion", "bash"])
            #expect(script.status == 0)
            try script.stdout.write(toFile: dir + "/completion.bash", atomically: true, encoding: .utf8)
            let words = line.split(separator: " ", omittingEmptySubsequences: false).map { "'\($0)'" }.joined(separator: " ")
            let function = "_" + tool.replacingOccurrences(of: "-", with: "_")
            let output = try TestSupport.shell("bash -c 'source \(dir)/completion.bash; COMP_WORDS=(\(words.replacingOccurrences(of: "'", with: "\"")));"
                                               + " COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); \(function); echo \"${COMPREPLY[*]}\"'")
            #expect(output == expected + "\n", "\(line) completed to '\(output)'")
        }
    }

    /// zsh reads the completion script without a syntax error.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/zsh"), "zsh is not installed (apt-get install zsh)"),
          arguments: ["provideo", "provideo-bench"])
    func zshCompletionParses(_ tool: String) throws {
        try TestSupport.withScratch("zsh-completion") { dir in
            let script = try TestSupport.run(tool, ["help", "--completion", "zsh"])
            #expect(script.status == 0 && script.stdout.hasPrefix("#compdef \(tool)\n"))
            try script.stdout.write(toFile: dir + "/_\(tool)", atomically: true, encoding: .utf8)
            let check = try TestSupport.run("/usr/bin/zsh", ["-n", dir + "/_\(tool)"])
            #expect(check.status == 0 && check.stderr.isEmpty, "zsh -n: \(check.stderr)")
        }
    }
}

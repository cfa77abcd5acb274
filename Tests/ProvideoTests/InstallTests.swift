import Foundation
import TestSupport
import Testing

/// `Tools/install` puts the CLIs, their man pages, completions and systemd units under a
/// prefix, and `systemd-analyze verify` accepts every unit as installed.
@Suite struct InstallTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    static let hasSystemd = FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze")
    static let units = ["provideo-recover.service", "provideo-ready.target", "provideo-metrics.service",
                        "provideo-metrics.timer", "provideo-recover@srv-pool.service", "provideo-mount@srv-capture.service"]

    private func install(_ scratch: String) throws -> String {
        let prefix = scratch + "/prefix"
        try TestSupport.shell("'\(Self.root)/Tools/install' --prefix '\(prefix)' --from '\(TestSupport.productsDirectory)'")
        return prefix
    }

    @Test func installsProgramsManPagesAndCompletions() throws {
        try TestSupport.withScratch("install") { dir in
            let prefix = try install(dir)
            for tool in ["provideo", "provideo-bench"] {
                let version = try TestSupport.run(prefix + "/bin/" + tool, ["--version"])
                #expect(version.stdout == "\(tool) 1.0.0\n")
                let page = try String(contentsOfFile: "\(prefix)/share/man/man1/\(tool).1", encoding: .utf8)
                let sameAsHelp = page == (try TestSupport.run(tool, ["help", "--man"])).stdout
                #expect(sameAsHelp, "the installed man page of \(tool) is not `\(tool) help --man`")
                let bash = try String(contentsOfFile: "\(prefix)/share/bash-completion/completions/\(tool)", encoding: .utf8)
                #expect(bash.hasSuffix("complete -o default -F _\(tool.replacingOccurrences(of: "-", with: "_")) \(tool)\n"))
                #expect(FileManager.default.fileExists(atPath: "\(prefix)/share/zsh/site-functions/_\(tool)"))
            }
            let recover = try String(contentsOfFile: prefix + "/lib/systemd/system/provideo-recover.service", encoding: .utf8)
            #expect(recover.contains("\nExecStart=\(prefix)/bin/provideo --pool /var/lib/provideo recover\n"))
            #expect(recover.contains("\nBefore=provideo-ready.target\n") && recover.contains("\nAfter=local-fs.target\n"))
        }
    }

    /// Every unit verifies (its ExecStart exists, its man page is found, no unknown setting);
    /// the same units without the program installed do not, so the check is real.
    @Test(.enabled(if: hasSystemd, "systemd-analyze is not installed (apt-get install systemd)"))
    func systemdAnalyzeVerifiesEveryUnit() throws {
        try TestSupport.withScratch("install-units") { dir in
            let prefix = try install(dir)
            let command = "cd '\(prefix)/lib/systemd/system' && MANPATH='\(prefix)/share/man' systemd-analyze verify "
                + Self.units.map { "'\($0)'" }.joined(separator: " ")
            let verified = try TestSupport.run("/bin/sh", ["-c", command])
            #expect(verified.status == 0 && verified.stderr.isEmpty, "systemd-analyze verify: \(verified.stderr)")
            try FileManager.default.removeItem(atPath: prefix + "/bin/provideo")
            let broken = try TestSupport.run("/bin/sh", ["-c", command])
            #expect(broken.status != 0 && broken.stderr.contains("\(prefix)/bin/provideo"), "\(broken.stderr)")
        }
    }
}

import Foundation
import TestSupport
import Testing

/// `Tools/install` puts the CLIs, their man pages, completions and systemd units under a
/// prefix, and `systemd-analyze verify` accepts every unit as installed; `Tools/c-library/install`
/// adds the C library.
@Suite struct InstallTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    static let hasSystemd = FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze")
    static let units = ["provideo-recover.service", "provideo-land.service", "provideo-ready.target", "provideo-metrics.service",
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
                #expect(version.stdout == "\(tool) 1.1.0\n")
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

    /// `Tools/c-library/install` lays the library out as a Debian package does: the file
    /// libprovideo.so.1.1.0 (mode 0644), the soname link libprovideo.so.1 and the development
    /// link libprovideo.so; provideo.pc's version is provideo.h's PROVIDEO_VERSION_* and the
    /// CLI's; a program linked with -lprovideo records the soname, not the development name.
    @Test func installsTheCLibraryAsDebianDoes() throws {
        try TestSupport.withScratch("install-c-library") { dir in
            let library = try CLibrary(scratch: dir)
            let lib = library.prefix + "/lib", files = FileManager.default
            let header = try String(contentsOfFile: CLibrary.header, encoding: .utf8)
            let parts = ["MAJOR", "MINOR", "PATCH"].map { part in
                header.firstMatch(of: try! Regex("#define PROVIDEO_VERSION_\(part) ([0-9]+)\n"))?.output[1].substring ?? "?"
            }
            let version = parts.joined(separator: ".")
            #expect(version == "1.1.0")
            let file = lib + "/libprovideo.so.\(version)"
            let attributes = try files.attributesOfItem(atPath: file)
            #expect(attributes[.type] as? FileAttributeType == .typeRegular)
            #expect((attributes[.posixPermissions] as? Int) == 0o644)
            #expect(try files.destinationOfSymbolicLink(atPath: lib + "/libprovideo.so.1") == "libprovideo.so.\(version)")
            #expect(try files.destinationOfSymbolicLink(atPath: lib + "/libprovideo.so") == "libprovideo.so.1")
            #expect(try TestSupport.shell("readelf -d '\(file)'").contains("Library soname: [libprovideo.so.1]"))
            let modversion = try TestSupport.shell("PKG_CONFIG_PATH='\(library.pkgConfigPath)' pkg-config --modversion provideo")
            #expect(modversion == "\(version)\n")
            #expect(try TestSupport.run(library.prefix + "/bin/provideo", ["--version"]).stdout == "provideo \(version)\n")
            let program = dir + "/minimal-recorder"
            try library.compile("minimal-recorder.c", to: program)
            let needed = try TestSupport.shell("readelf -d '\(program)'")
            #expect(needed.contains("Shared library: [libprovideo.so.1]") && !needed.contains("[libprovideo.so]"), "\(needed)")
        }
    }

    /// Every unit verifies (its ExecStart exists, its man page is found, no unknown setting) as
    /// installed with `--prefix /usr` and with `--prefix /usr/local`, each staged under a root of
    /// its own (`--destdir`) beside a copy of this system's units, which `systemd-analyze verify
    /// --root` reads as the system; the same units without the program installed do not verify,
    /// so the check is real.
    @Test(.enabled(if: hasSystemd, "systemd-analyze is not installed (apt-get install systemd)"))
    func systemdAnalyzeVerifiesEveryUnit() throws {
        for prefix in ["/usr", "/usr/local"] {
            try TestSupport.withScratch("install-units") { dir in
                let root = dir + "/root"
                try TestSupport.shell("mkdir -p '\(root)/usr/lib/systemd' && cp -a /usr/lib/systemd/system '\(root)/usr/lib/systemd/' && "
                                      + "'\(Self.root)/Tools/install' --prefix \(prefix) --destdir '\(root)' "
                                      + "--from '\(TestSupport.productsDirectory)'")
                let command = "cd '\(root)\(prefix)/lib/systemd/system' && MANPATH='\(root)\(prefix)/share/man' "
                    + "systemd-analyze verify --root='\(root)' " + Self.units.map { "'\($0)'" }.joined(separator: " ")
                let unit = try String(contentsOfFile: "\(root)\(prefix)/lib/systemd/system/provideo-recover.service", encoding: .utf8)
                #expect(unit.contains("\nExecStart=\(prefix)/bin/provideo --pool /var/lib/provideo recover\n"), "\(unit)")
                let verified = try TestSupport.run("/bin/sh", ["-c", command])
                #expect(verified.status == 0 && verified.stderr.isEmpty, "systemd-analyze verify, \(prefix): \(verified.stderr)")
                try FileManager.default.removeItem(atPath: "\(root)\(prefix)/bin/provideo")
                let broken = try TestSupport.run("/bin/sh", ["-c", command])
                #expect(broken.status != 0 && broken.stderr.contains("\(prefix)/bin/provideo is not executable"), "\(broken.stderr)")
            }
        }
    }
}

import Foundation
import Testing

/// Docs/ARCHITECTURE.md stays true (issue 26): its folders exist and the library's root holds
/// at most four files; every `file` `function` step of its two paths names a function of that
/// file; every `extension Pool` outside `Pool/` is one the page justifies.
@Suite struct ArchitectureTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let library = root.appendingPathComponent("Sources/ProVideoStorage").path
    static let sources = root.appendingPathComponent("Sources").path
    static var page: String { (try? String(contentsOfFile: root.path + "/Docs/ARCHITECTURE.md", encoding: .utf8)) ?? "" }

    static func swiftFiles(in directory: String) -> [String] {
        (FileManager.default.enumerator(atPath: directory)?.compactMap { $0 as? String } ?? []).filter { $0.hasSuffix(".swift") }
    }

    @Test func theFoldersAreThePagesFolders() throws {
        let page = Self.page
        let folders = try FileManager.default.contentsOfDirectory(atPath: Self.library).filter { name in
            var directory: ObjCBool = false
            return FileManager.default.fileExists(atPath: Self.library + "/" + name, isDirectory: &directory) && directory.boolValue
        }
        #expect(folders.count >= 7)
        for folder in folders { #expect(page.contains("| `\(folder)/` |"), "\(folder)/ is not in Docs/ARCHITECTURE.md") }
        let rootFiles = try FileManager.default.contentsOfDirectory(atPath: Self.library).filter { $0.hasSuffix(".swift") }
        #expect(rootFiles.count <= 4, "the library's root holds \(rootFiles.sorted())")
    }

    /// The rows of the page's three-column table whose first cell matches `name` (a pattern):
    /// (name, owns, may use or import).
    static func rows(named name: String) throws -> [(name: String, owns: String, uses: String)] {
        let page = page
        let row = try NSRegularExpression(pattern: #"^\| `"# + name + #"` \| (.*?) \| (.*?) \|$"#, options: .anchorsMatchLines)
        return row.matches(in: page, range: NSRange(page.startIndex..., in: page)).map { match in
            let cell = { (index: Int) in String(page[Range(match.range(at: index), in: page)!]) }
            return (cell(1), cell(2), cell(3))
        }
    }

    /// Each folder starts with a README saying what it owns and may use, as the page's table does.
    @Test func everyFolderSaysWhatItOwns() throws {
        let folders = try Self.rows(named: #"(\w+)/"#)
        for (folder, owns, uses) in folders {
            let readme = try? String(contentsOfFile: Self.library + "/\(folder)/README.md", encoding: .utf8)
            #expect(readme?.contains("Owns: \(owns).") == true, "\(folder)/README.md does not say what the page says it owns")
            #expect(readme?.contains("May use: \(uses).") == true, "\(folder)/README.md does not say what it may use")
        }
        #expect(folders.count >= 7)
    }

    /// Each module of the page's module table has a README saying what the row says, and its
    /// target in Package.swift imports nothing above it: its dependencies are what the row
    /// allows (the build then refuses any other use).
    @Test func everyModuleSaysWhatItOwnsAndImportsOnlyThat() throws {
        let manifest = try String(contentsOfFile: Self.root.path + "/Package.swift", encoding: .utf8)
        let modules = try Self.rows(named: #"(ProVideo\w+)"#)
        for (module, owns, imports) in modules {
            let readme = try? String(contentsOfFile: Self.sources + "/\(module)/README.md", encoding: .utf8)
            #expect(readme?.contains("Owns: \(owns).") == true, "\(module)/README.md does not say what the page says it owns")
            #expect(readme?.contains("May import: \(imports).") == true, "\(module)/README.md does not say what it may import")
            let target = try #require(manifest.range(of: #".target(name: "\#(module)", dependencies: ["#),
                                      "no target \(module) in Package.swift")
            let dependencies = manifest[target.upperBound...].prefix { $0 != "]" }
            let named = dependencies.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
            for dependency in named {
                #expect(imports.contains(dependency), "\(module) imports \(dependency), which the page does not allow")
            }
        }
        #expect(modules.count >= 3, "only \(modules.count) module rows on the page")
    }

    @Test func everyStepNamesAFunctionOfItsFile() throws {
        let page = Self.page
        let step = try NSRegularExpression(pattern: #"`([A-Za-z]+/[A-Za-z]+\.swift)`\s+`(\w+)`((?:(?:,\s*|\s+and\s+)`\w+`)*)"#)
        var checked = 0
        for match in step.matches(in: page, range: NSRange(page.startIndex..., in: page)) {
            let file = String(page[Range(match.range(at: 1), in: page)!])
            let more = String(page[Range(match.range(at: 3), in: page)!])
            let names = [String(page[Range(match.range(at: 2), in: page)!])]
                + more.split(separator: "`").map(String.init).filter { $0.allSatisfy { $0.isLetter || $0.isNumber } && !$0.isEmpty }
            // A path under the library, else under Sources/ (another module's file).
            let inLibrary = Self.library + "/" + file
            let text = try String(contentsOfFile: FileManager.default.fileExists(atPath: inLibrary) ? inLibrary
                                  : Self.sources + "/" + file, encoding: .utf8)
            for name in names {
                #expect(text.contains("func \(name)(") || text.contains("func \(name)<"), "\(file) has no function \(name)")
                checked += 1
            }
        }
        #expect(checked >= 30, "only \(checked) steps were found on the page")
    }

    /// The write path is its writer's (`ProVideoWritePath`), the capture's API is `Capture/`'s:
    /// no other folder extends `Capture` (issue 40), its `async` overlay included.
    @Test func onlyCaptureExtendsCapture() throws {
        var seen = 0
        for file in Self.swiftFiles(in: Self.library) {
            let text = try String(contentsOfFile: Self.library + "/" + file, encoding: .utf8)
            let extends = text.split(separator: "\n").contains { $0.hasPrefix("extension Capture {") || $0.hasPrefix("extension Capture:") }
            if extends { seen += 1 }
            #expect(!extends || file.hasPrefix("Capture/"),
                    "\(file) extends Capture outside Capture/")
        }
        #expect(seen >= 3, "only \(seen) files extend Capture: the scan found nothing to check")
    }

    /// The pool's operations are the pool's: no folder but `Pool/` extends `Pool` (issue 40);
    /// the subsystems are values it hands what they need.
    @Test func onlyPoolExtendsPool() throws {
        var seen = 0
        for file in Self.swiftFiles(in: Self.library) {
            let text = try String(contentsOfFile: Self.library + "/" + file, encoding: .utf8)
            let extends = text.split(separator: "\n").contains { $0.hasPrefix("extension Pool {") || $0.hasPrefix("extension Pool:") }
            if extends { seen += 1 }
            #expect(!extends || file.hasPrefix("Pool/"), "\(file) extends Pool outside Pool/")
        }
        #expect(seen >= 6, "only \(seen) files extend Pool: the scan found nothing to check")
    }
}

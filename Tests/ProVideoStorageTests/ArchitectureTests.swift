import Foundation
import Testing

/// Docs/ARCHITECTURE.md stays true (issue 26): its folders exist and the library's root holds
/// at most three files; every `file` `function` step of its two paths names a function of that
/// file; every `extension Pool` outside `Pool/` is one the page justifies.
@Suite struct ArchitectureTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let library = root.appendingPathComponent("Sources/ProVideoStorage").path
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
        #expect(folders.count >= 10)
        for folder in folders { #expect(page.contains("| `\(folder)/` |"), "\(folder)/ is not in Docs/ARCHITECTURE.md") }
        let rootFiles = try FileManager.default.contentsOfDirectory(atPath: Self.library).filter { $0.hasSuffix(".swift") }
        #expect(rootFiles.count <= 3, "the library's root holds \(rootFiles.sorted())")
    }

    /// Each folder starts with a README saying what it owns and may use, as the page's table does.
    @Test func everyFolderSaysWhatItOwns() throws {
        let page = Self.page
        let row = try NSRegularExpression(pattern: #"^\| `(\w+)/` \| (.*?) \| (.*?) \|$"#, options: .anchorsMatchLines)
        var folders = 0
        for match in row.matches(in: page, range: NSRange(page.startIndex..., in: page)) {
            let folder = String(page[Range(match.range(at: 1), in: page)!])
            let owns = String(page[Range(match.range(at: 2), in: page)!])
            let uses = String(page[Range(match.range(at: 3), in: page)!])
            let readme = try? String(contentsOfFile: Self.library + "/\(folder)/README.md", encoding: .utf8)
            #expect(readme?.contains("Owns: \(owns).") == true, "\(folder)/README.md does not say what the page says it owns")
            #expect(readme?.contains("May use: \(uses).") == true, "\(folder)/README.md does not say what it may use")
            folders += 1
        }
        #expect(folders >= 10)
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
            let text = try String(contentsOfFile: Self.library + "/" + file, encoding: .utf8)
            for name in names {
                #expect(text.contains("func \(name)(") || text.contains("func \(name)<"), "\(file) has no function \(name)")
                checked += 1
            }
        }
        #expect(checked >= 30, "only \(checked) steps were found on the page")
    }

    @Test func everyPoolExtensionOutsidePoolIsJustified() throws {
        let page = Self.page
        for file in Self.swiftFiles(in: Self.library) where !file.hasPrefix("Pool/") {
            let text = try String(contentsOfFile: Self.library + "/" + file, encoding: .utf8)
            if text.split(separator: "\n").contains(where: { $0.hasPrefix("extension Pool {") || $0.hasPrefix("extension Pool:") }) {
                #expect(page.contains("| `\(file)` |"), "extension Pool in \(file) is not justified in Docs/ARCHITECTURE.md")
            }
        }
    }
}

import Foundation
import ProVideoStorage

/// Rows for scripts as `zpool list` prints them: a header of upper-case column names and
/// columns aligned with spaces, or with `-H` (`scripted`) no header and one tab between fields.
/// A field's tab, newline or backslash is written `\t`, `\n`, `\\`, so that every row is one
/// line and every field is one field, and every other control character escaped as well
/// (`TerminalText`: ESC as `\x1b`), so that a pool member's text cannot drive the terminal;
/// an absent value is `-`.
public struct TextTable {
    public var columns: [String]
    public var rows: [[String]] = []

    public init(columns: [String]) { self.columns = columns }

    /// Adds a row; nil fields are shown as `-`.
    public mutating func add(_ fields: [String?]) {
        precondition(fields.count == columns.count, "a row of \(fields.count) fields for \(columns.count) columns")
        rows.append(fields.map { Self.escape($0 ?? "-") })
    }

    /// The lines, each ending in a newline.
    public func render(scripted: Bool) -> String {
        if scripted { return rows.map { $0.joined(separator: "\t") + "\n" }.joined() }
        let all = [columns] + rows
        let widths = columns.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
        return all.map { row in
            row.indices.map { $0 == row.count - 1 ? row[$0] : row[$0].padding(toLength: widths[$0], withPad: " ", startingAt: 0) }
                .joined(separator: "  ") + "\n"
        }.joined()
    }

    static func escape(_ field: String) -> String { TerminalText.escaped(field) }
}

/// `-H` and `-p` (also `-Hp`), as `zpool list -Hp` takes them: no header and tabs, exact numbers.
public struct ParsableOptions {
    /// `-H`: no header, fields separated by one tab.
    public var scripted = false
    /// `-p`: exact numbers (bytes, bits per second, seconds) instead of rounded ones with units.
    public var exact = false

    /// Whether either was given: the command prints its table instead of its view.
    public var any: Bool { scripted || exact }

    public init() {}

    /// Removes `-H`, `-p`, `-Hp` and `-pH` from `arguments`.
    public static func read(_ arguments: inout Arguments) -> ParsableOptions {
        var options = ParsableOptions()
        if arguments.flag("-Hp") || arguments.flag("-pH") { options.scripted = true; options.exact = true }
        if arguments.flag("-H") { options.scripted = true }
        if arguments.flag("-p") { options.exact = true }
        return options
    }
}


/// Text that came from the pool's files (a note's destination or reason, a landing's last
/// error, a journal's destination or engine, a salvage's note, a held recording's name), made
/// safe to print on an administrator's terminal. Any pool member may write those files
/// (Docs/SECURITY.md), so printed raw, an ESC sequence in a destination could move root's
/// cursor, rewrite the lines above it, retitle the window or hide what follows, and a CR or
/// newline could forge a line of output.
///
/// Escaped as `ls -b` and systemd escape: `\a \b \t \n \v \f \r` by name, every other C0
/// control and DEL as `\xHH` (ESC is `\x1b`), a C1 control (U+0080–U+009F, which a terminal
/// may take as CSI and the like) and the Unicode line separators and bidirectional overrides
/// (which reorder or break what follows them) as `\uHHHH`, and the backslash itself as `\\`,
/// so that the escaped text reads back unambiguously. Everything else, other scripts and emoji
/// included, is kept. Human output only: `--json` prints the exact string.
package enum TerminalText {
    package static func escaped(_ text: String) -> String {
        // The common case allocates nothing new.
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            guard needsEscape(scalar) else {
                out.unicodeScalars.append(scalar)
                continue
            }
            switch scalar {
            case "\\": out += "\\\\"
            case "\u{07}": out += "\\a"
            case "\u{08}": out += "\\b"
            case "\t": out += "\\t"
            case "\n": out += "\\n"
            case "\u{0B}": out += "\\v"
            case "\u{0C}": out += "\\f"
            case "\r": out += "\\r"
            default:
                if scalar.value < 0x80 {
                    out += "\\x" + hex(scalar.value, digits: 2)
                } else {
                    out += "\\u" + hex(scalar.value, digits: 4)
                }
            }
        }
        return out
    }

    /// C0 controls, DEL, C1 controls, U+2028/U+2029, the bidirectional embeddings, overrides
    /// and isolates (U+202A–U+202E, U+2066–U+2069), and the backslash.
    static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x5C, 0x7F...0x9F, 0x2028...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }

    private static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: max(digits - text.count, 0)) + text
    }
}

extension String {
    /// This text as a terminal may be shown it (`TerminalText.escaped`).
    package var terminalSafe: String { TerminalText.escaped(self) }
}


/// Names the pool derives from a recording's file name (a copy's temporary name, a recovered
/// sibling, a held recording and its note) so that they always fit in one directory entry:
/// NAME_MAX, 255 bytes on ext4, XFS, btrfs and tmpfs (<linux/limits.h>). A legal 250-byte
/// destination name plus a suffix used to exceed it, and the step failed with ENAMETOOLONG.
enum DerivedName {
    static let maximumBytes = 255

    /// `text` if it has at most `bytes` bytes of UTF-8; otherwise its start, cut at a character
    /// boundary, then `~` and 8 hex digits of a hash of the whole text (two long names that
    /// share their start stay distinct), then its extension (up to 16 bytes) if it has one.
    static func shortened(_ text: String, toBytes bytes: Int) -> String {
        guard text.utf8.count > bytes else { return text }
        let ext = splitExtension(text).ext
        let mark = "~" + String(String(hash(text), radix: 16).suffix(8))
        let budget = max(bytes - ext.utf8.count - mark.utf8.count, 0)
        var start = ""
        for character in text.dropLast(ext.count) {
            guard start.utf8.count + String(character).utf8.count <= budget else { break }
            start.append(character)
        }
        return start + mark + ext
    }

    /// "take.mov" → ("take", ".mov"); a name without a short extension (at most 16 bytes, not
    /// a leading dot) → (name, "").
    static func splitExtension(_ name: String) -> (stem: String, ext: String) {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex, name.utf8.count - name[..<dot].utf8.count <= 16
        else { return (name, "") }
        return (String(name[..<dot]), String(name[dot...]))
    }

    /// FNV-1a, 64 bits: stable across runs and processes (Swift's `Hasher` is seeded per
    /// process), so a killed copy's temporary name is found again.
    private static func hash(_ text: String) -> UInt64 {
        text.utf8.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
    }
}

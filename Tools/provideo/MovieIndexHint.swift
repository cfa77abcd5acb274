import Foundation
import Glibc

/// Whether a take cut off mid-stream (storage full, a signal) plays, from its top-level
/// ISO BMFF boxes (ISO/IEC 14496-12 §4.2: a 32-bit big-endian size, a four-character type; size
/// 1: a 64-bit size follows; size 0: the box runs to the end of the file), and what to do when
/// it does not. A MOV or MP4 written front to back keeps its index (`moov`) at the end, so a cut
/// one has none and players refuse it; a fragmented one (`moof` boxes, `-movflags
/// frag_keyframe+empty_moov`) plays up to its last whole fragment.
enum MovieIndexHint {
    /// The box types a MOV/MP4 file starts with.
    static let firstBoxes: Set<String> = ["ftyp", "moov", "mdat", "free", "skip", "wide", "styp", "pnot"]
    /// Boxes read before the answer stands: a take's top level holds a few, a fragmented one
    /// two per fragment; past this many, enough of it was seen.
    static let boxLimit = 100_000

    /// One sentence for a cut-off take at `path`, or nil when it is no MOV/MP4 (the first box
    /// is none of `firstBoxes`) or it cannot be read (the take's own message stands alone).
    static func sentence(for path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        let size = Int64(st.st_size)
        var offset: Int64 = 0, seen: Set<String> = [], boxes = 0
        while offset + 8 <= size && boxes < boxLimit {
            var header = [UInt8](repeating: 0, count: 16)
            guard pread(fd, &header, 16, off_t(offset)) >= 8 else { return nil }
            let type = String(decoding: header[4..<8], as: UTF8.self)
            if boxes == 0 && !firstBoxes.contains(type) { return nil }
            seen.insert(type)
            var length = header[0..<4].reduce(Int64(0)) { $0 << 8 | Int64($1) }
            if length == 1 {
                let large = header[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                guard large <= UInt64(Int64.max) else { break }
                length = Int64(large)
            } else if length == 0 {
                length = size - offset
            }
            guard length >= 8 else { break }
            boxes += 1
            guard length <= size - offset else { break }  // the last box, cut short
            offset += length
        }
        if boxes == 0 { return nil }
        if seen.contains("moof") {
            return "it is a fragmented MOV/MP4: players open it up to its last whole fragment"
        }
        // An index written first (a file remuxed with +faststart, then fed in): players read
        // it and play up to the cut.
        if seen.contains("moov") { return nil }
        return "it is a MOV/MP4 whose index (the moov box, written last) is missing, so players cannot open it as is: "
            + "rebuild the index from a whole take of the same camera and settings (an untrunc-style tool), and record "
            + "fragmented MOV (ffmpeg -movflags frag_keyframe+empty_moov) or MKV so a cut-off take stays playable"
    }
}

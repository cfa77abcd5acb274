import Foundation
import TestSupport

/// The C library as a C recorder gets it: installed under a scratch prefix by
/// `Tools/c-library/install --from` the built products, then C programs built from
/// `Tools/c-library/` with `cc $(pkg-config --cflags --libs provideo …)` alone.
struct CLibrary {
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Tools/c-library").path

    /// The hand-written header, as installed.
    static let header = URL(fileURLWithPath: sources).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/CProVideoAPI/include/provideo.h").path

    let prefix: String
    var pkgConfigPath: String { prefix + "/lib/pkgconfig" }

    /// Installs into `scratch/prefix`.
    init(scratch: String) throws {
        prefix = scratch + "/prefix"
        let products = TestSupport.productsDirectory
        guard FileManager.default.fileExists(atPath: products + "/libProVideoC.so") else {
            throw CLibraryError("no libProVideoC.so in \(products): run `swift build` (swift test builds it)")
        }
        try TestSupport.shell("\(Self.sources)/install --prefix \(prefix) --from \(products)")
    }

    /// Compiles `Tools/c-library/SOURCE` into `output` against the installed library and the
    /// pkg-config `packages`; `shared` builds a plugin.
    func compile(_ source: String, to output: String, packages: [String] = [], shared: Bool = false) throws {
        let flags = "$(PKG_CONFIG_PATH=\(pkgConfigPath) pkg-config --cflags --libs provideo \(packages.joined(separator: " ")))"
        try TestSupport.shell("cc -Wall -Werror -O1 \(shared ? "-shared -fPIC" : "") -o \(output) \(Self.sources)/\(source) "
                              + "\(flags) -lpthread")
    }
}

struct CLibraryError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// What ffprobe and ffmpeg say about a recording.
enum Probe {
    /// Frames ffprobe decodes in the first video stream.
    static func frames(_ path: String) throws -> Int? {
        let out = try TestSupport.shell("ffprobe -v error -count_frames -select_streams v:0 "
                                        + "-show_entries stream=nb_read_frames -of csv=p=0 \(path)")
        return Int(out.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// "codec,profile" of the first video stream, e.g. "prores,HQ".
    static func codec(_ path: String) throws -> String {
        try TestSupport.shell("ffprobe -v error -select_streams v:0 -show_entries stream=codec_name,profile "
                              + "-of csv=p=0 \(path)").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The decoded frames' checksums, one line per frame (`ffmpeg -f framemd5`).
    static func frameMD5(_ path: String) throws -> [String] {
        try TestSupport.shell("ffmpeg -v error -i \(path) -f framemd5 -").split(separator: "\n")
            .filter { !$0.hasPrefix("#") }.map(String.init)
    }

    /// The top-level atoms of a QuickTime file: (type, size).
    static func atoms(_ path: String) -> [(String, Int64)] {
        let bytes = TestSupport.readFile(path)
        var atoms: [(String, Int64)] = []
        var offset = 0
        while offset + 8 <= bytes.count {
            var size = bytes[offset..<offset + 4].reduce(Int64(0)) { $0 << 8 | Int64($1) }
            let type = String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self)
            if size == 1, offset + 16 <= bytes.count {
                size = bytes[offset + 8..<offset + 16].reduce(Int64(0)) { $0 << 8 | Int64($1) }
            }
            atoms.append((type, size))
            guard size >= 8 else { break }
            offset += Int(size)
        }
        return atoms
    }
}

import Foundation

/// The size of every frame a simulated recorder delivers, in bytes.
package struct FrameSizes: Sendable, Equatable {
    /// One entry per frame of the run.
    package let sizes: [Int]

    package init(sizes: [Int]) { self.sizes = sizes }

    /// `count` frames of a constant-bitrate stream: `bitrate` bits per second at `fps`.
    /// Sizes differ by at most one byte so that the total is exact.
    package static func constant(bitrate: Int64, fps: Double, count: Int) -> FrameSizes {
        let bytesPerFrame = Double(bitrate) / 8 / fps
        return FrameSizes(sizes: (0..<count).map { i in
            Int((Double(i + 1) * bytesPerFrame).rounded(.down)) - Int((Double(i) * bytesPerFrame).rounded(.down))
        })
    }

    /// `count` frames cycling through `trace` (sizes in bytes), scaled so that the stream's
    /// rate is `bitrate` bits per second at `fps` when one is given (the trace keeps its shape).
    package static func trace(_ trace: [Int], bitrate: Int64?, fps: Double, count: Int) -> FrameSizes {
        let mean = Double(trace.reduce(0, +)) / Double(trace.count)
        let scale = bitrate.map { Double($0) / 8 / fps / mean } ?? 1
        return FrameSizes(sizes: (0..<count).map { max(Int((Double(trace[$0 % trace.count]) * scale).rounded()), 1) })
    }

    /// Reads a trace: one frame size in bytes per line (blank lines and `#` comments skipped),
    /// as `ffprobe -show_entries packet=size -of csv=p=0` prints it.
    /// - Throws: `BenchError` for an unreadable file, a line that is not a positive whole
    ///   number, or a file with no sizes.
    package static func readTrace(_ path: String) throws -> [Int] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw BenchError("cannot read the frame trace \(path)")
        }
        var sizes: [Int] = []
        for (number, line) in String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let text = line.trimmingCharacters(in: .whitespaces.union(CharacterSet(charactersIn: ",")))
            if text.isEmpty || text.hasPrefix("#") { continue }
            guard let size = Int(text), size > 0 else {
                throw BenchError("\(path) line \(number + 1): '\(text)' is not a frame size in bytes")
            }
            sizes.append(size)
        }
        guard !sizes.isEmpty else { throw BenchError("\(path) holds no frame sizes") }
        return sizes
    }

    package var total: Int64 { sizes.reduce(0) { $0 + Int64($1) } }
    package var largest: Int { sizes.max() ?? 0 }
}

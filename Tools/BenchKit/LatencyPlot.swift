import Foundation

/// An SVG chart of append latency over time, one line per mode, on a log scale: each point is
/// the slowest hand-over in its time slice, so stalls stay visible at any run length. Each
/// dropped frame is a tick in its mode's colour under the plot; the title wraps.
package enum LatencyPlot {
    static let width = 900.0, plotHeight = 335.0
    static let left = 70.0, right = 20.0, bottom = 45.0
    /// Characters of the 14-px title per line within the chart's width.
    static let titleLine = 110
    /// Height of the strip under the plot where dropped frames are ticked.
    static let dropStrip = 10.0
    static let slices = 300
    static let colors: [BenchMode: String] = [.pool: "#1f6fb4", .buffered: "#d62728", .direct: "#2c9c2c", .mount: "#9467bd"]

    /// - Parameters:
    ///   - runs: one run per mode (the first repeat of each).
    ///   - frameInterval: nanoseconds, drawn as a dashed line: a hand-over above it is late.
    ///   - legends: each run's legend, instead of its mode and engine.
    package static func svg(_ runs: [ModeRun], frameInterval: UInt64, title: String, legends: [String]? = nil) -> String {
        let all = runs.flatMap { $0.samples }
        let duration = max(Double(all.map(\.time).max() ?? 0) / 1e9, 1e-3)
        let lowest = floor(log10(Double(max(all.map(\.latency).min() ?? 1_000, 1))))
        let highest = max(ceil(log10(Double(max(all.map(\.latency).max() ?? 1, frameInterval)))), lowest + 1)
        let titleLines = wrapped(title, width: titleLine)
        let top = 22 + 17 * Double(titleLines.count) + 4
        let height = top + plotHeight + dropStrip + bottom
        let plotWidth = width - left - right
        func x(_ seconds: Double) -> Double { left + seconds / duration * plotWidth }
        func y(_ nanoseconds: UInt64) -> Double {
            top + plotHeight * (highest - log10(Double(max(nanoseconds, 1)))) / (highest - lowest)
        }
        func f(_ v: Double) -> String { String(format: "%.1f", v) }

        var svg = ["<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(height))\" "
                   + "font-family=\"sans-serif\" font-size=\"12\">",
                   "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>",
                   "<text x=\"\(f(left))\" y=\"22\" font-size=\"14\">"
                   + titleLines.enumerated().map { index, line in
                       "<tspan x=\"\(f(left))\" dy=\"\(index == 0 ? 0 : 17)\">\(escape(line))</tspan>"
                   }.joined() + "</text>"]
        for decade in Int(lowest)...Int(highest) {
            let ny = y(UInt64(pow(10, Double(decade))))
            svg.append("<line x1=\"\(f(left))\" y1=\"\(f(ny))\" x2=\"\(f(width - right))\" y2=\"\(f(ny))\" stroke=\"#ddd\"/>")
            svg.append("<text x=\"\(f(left - 6))\" y=\"\(f(ny + 4))\" text-anchor=\"end\">\(label(decade))</text>")
        }
        let step = max((duration / 6).rounded(.up), 1)
        for second in stride(from: 0.0, through: duration, by: step) {
            svg.append("<text x=\"\(f(x(second)))\" y=\"\(f(height - bottom + 16))\" text-anchor=\"middle\">\(Int(second)) s</text>")
        }
        svg.append("<text x=\"\(f(left + plotWidth / 2))\" y=\"\(f(height - 8))\" text-anchor=\"middle\">time since the first frame; "
                   + "each point: the slowest append in \(f(duration / Double(slices) * 1000)) ms</text>")
        let interval = y(frameInterval)
        svg.append("<line x1=\"\(f(left))\" y1=\"\(f(interval))\" x2=\"\(f(width - right))\" y2=\"\(f(interval))\" "
                   + "stroke=\"#888\" stroke-dasharray=\"6 4\"/>")
        svg.append("<text x=\"\(f(width - right - 4))\" y=\"\(f(interval - 4))\" text-anchor=\"end\" fill=\"#666\">frame interval</text>")
        svg.append("<rect x=\"\(f(left))\" y=\"\(f(top))\" width=\"\(f(plotWidth))\" height=\"\(f(plotHeight))\" fill=\"none\" stroke=\"#444\"/>")
        for (index, run) in runs.enumerated() {
            var slowest = [UInt64?](repeating: nil, count: slices)
            for sample in run.samples {
                let slice = min(Int(Double(sample.time) / 1e9 / duration * Double(slices)), slices - 1)
                slowest[slice] = max(slowest[slice] ?? 0, sample.latency)
            }
            let points = slowest.enumerated().compactMap { slice, value in
                value.map { "\(f(x((Double(slice) + 0.5) * duration / Double(slices)))),\(f(y($0)))" }
            }
            let color = colors[run.mode] ?? "black"
            svg.append("<polyline fill=\"none\" stroke=\"\(color)\" stroke-width=\"1.2\" points=\"\(points.joined(separator: " "))\"/>")
            let legendY = top + 16 + Double(index) * 16
            svg.append("<line x1=\"\(f(left + 10))\" y1=\"\(f(legendY - 4))\" x2=\"\(f(left + 30))\" y2=\"\(f(legendY - 4))\" "
                       + "stroke=\"\(color)\" stroke-width=\"2\"/>")
            let legend = legends?[index] ?? "\(run.mode.rawValue) (\(run.engine))"
            let dropped = run.drops.isEmpty ? "" : "; \(run.drops.count) dropped (ticks below)"
            svg.append("<text x=\"\(f(left + 36))\" y=\"\(f(legendY))\">\(escape(legend + dropped))</text>")
            for drop in run.drops {
                let dx = x(Double(drop) / 1e9)
                svg.append("<line x1=\"\(f(dx))\" y1=\"\(f(top + plotHeight + 1))\" x2=\"\(f(dx))\" "
                           + "y2=\"\(f(top + plotHeight + dropStrip))\" stroke=\"\(color)\" class=\"drop\"/>")
            }
        }
        svg.append("</svg>")
        return svg.joined(separator: "\n") + "\n"
    }

    /// "1 µs", "10 ms", "1 s" for 10^decade nanoseconds.
    static func label(_ decade: Int) -> String {
        let units = [(9, "s"), (6, "ms"), (3, "µs"), (0, "ns")]
        let (power, unit) = units.first { decade >= $0.0 } ?? (0, "ns")
        return "\(Int(pow(10, Double(decade - power)))) \(unit)"
    }

    /// `text` in lines of at most `width` characters, broken at spaces (a longer word is a
    /// line of its own).
    static func wrapped(_ text: String, width: Int) -> [String] {
        var lines: [String] = [], line = ""
        for word in text.split(separator: " ", omittingEmptySubsequences: false) {
            if !line.isEmpty && line.count + 1 + word.count > width {
                lines.append(line)
                line = String(word)
            } else {
                line += (line.isEmpty ? "" : " ") + word
            }
        }
        return lines + [line]
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
    }
}

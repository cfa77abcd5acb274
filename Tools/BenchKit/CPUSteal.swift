import Foundation

/// The share of the machine's CPU time its hypervisor gave to others: the `steal` column of the
/// first line of /proc/stat (proc(5): "time spent in other operating systems when running in a
/// virtualized environment"), over the time between two readings. On this project's VM a
/// writer beside the recorder made the host steal 12 % of it, and woke a `SCHED_FIFO` thread
/// up to 126 ms late: longer than a capture card's queue of two frames.
package struct CPUSteal: Sendable, Equatable {
    /// Clock ticks (USER_HZ) stolen and in all, every CPU summed.
    package var stolen: UInt64
    package var total: UInt64

    /// Now; nil where /proc/stat is unreadable or has no steal column (kernels before 2.6.11).
    package static func read() -> CPUSteal? {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
              let line = text.split(separator: "\n").first else { return nil }
        return parse(line)
    }

    /// "cpu  user nice system idle iowait irq softirq steal guest guest_nice"; guest time is
    /// already counted in user and nice, so it is left out of the total.
    static func parse(_ line: Substring) -> CPUSteal? {
        let fields = line.split(separator: " ")
        guard fields.first == "cpu", fields.count >= 9 else { return nil }
        let ticks = fields[1...8].compactMap { UInt64($0) }
        guard ticks.count == 8 else { return nil }
        return CPUSteal(stolen: ticks[7], total: ticks.reduce(0, +))
    }

    /// The share stolen since `earlier`, 0 to 1; nil when no tick passed.
    package func share(since earlier: CPUSteal) -> Double? {
        guard total > earlier.total, stolen >= earlier.stolen else { return nil }
        return Double(stolen - earlier.stolen) / Double(total - earlier.total)
    }
}

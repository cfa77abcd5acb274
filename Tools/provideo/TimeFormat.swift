import Foundation

/// Durations and rates as a recorder's display shows them.
enum TimeFormat {
    /// "1:02:05" (hours:minutes:seconds), rounded down: the time surely left; under 10 s,
    /// seconds with a decimal ("4.2 s"), as a recorder about to stop needs them.
    static func clock(_ seconds: Double) -> String {
        // NaN passes both `max` and `min` below, and an Int64 of it traps.
        guard !seconds.isNaN else { return "unknown" }
        if seconds < 10 { return String(format: "%.1f s", (max(seconds, 0) * 10).rounded(.down) / 10) }
        let whole = Int64(checked: min(max(seconds, 0), 1e15).rounded(.down)) ?? 0
        return String(format: "%lld:%02lld:%02lld", whole / 3600, whole / 60 % 60, whole % 60)
    }

    /// "880 Mbit/s", "3.98 Gbit/s".
    static func bitrate(_ bits: Int64) -> String {
        if bits >= 1_000_000_000 { return String(format: "%.2f Gbit/s", Double(bits) / 1e9) }
        if bits >= 1_000_000 { return String(format: "%.0f Mbit/s", Double(bits) / 1e6) }
        return "\(bits) bit/s"
    }
}

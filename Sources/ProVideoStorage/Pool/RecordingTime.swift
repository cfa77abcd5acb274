
/// Remaining capacity as recording time: how long a stream of a given bitrate can still be
/// recorded into the pool (beyond Apple's API, which reports bytes only).
package enum RecordingTime {
    /// Seconds that `bytes` hold at `bitrate` bits per second; nil (unknown) for a bitrate
    /// ≤ 0, never negative. Computed in floating point, so 2 TiB at 12 Gbit/s (and any
    /// `Int64`) cannot overflow.
    package static func seconds(bytes: Int64, atBitrate bitrate: Int64) -> Double? {
        guard bitrate > 0 else { return nil }
        return Double(max(bytes, 0)) * 8 / Double(bitrate)
    }
}

extension PoolStatus {
    /// The recording time the remaining capacity holds at `bitrate` bits per second, in
    /// seconds; nil (unknown) for a bitrate ≤ 0.
    public func remainingDuration(atBitrate bitrate: Int64) -> Double? {
        RecordingTime.seconds(bytes: remainingCapacity, atBitrate: bitrate)
    }
}

extension Pool {
    /// The recording time the remaining capacity holds at `bitrate` bits per second, in
    /// seconds, as seen now from every process; nil (unknown) for a bitrate ≤ 0.
    public func remainingDuration(atBitrate bitrate: Int64) throws -> Double? {
        RecordingTime.seconds(bytes: try remainingCapacity, atBitrate: bitrate)
    }
}

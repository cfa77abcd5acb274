
/// A finished recording.
public struct RecordingResult: Sendable {
    /// Where the recording is: the destination, or a place in the pool when the destination
    /// could not take it.
    public var path: String
    /// Its length in bytes.
    public var length: Int64
    public var statistics: CaptureStatistics
    /// Set when the recording is landing: it is in the pool (`path`) and `provideo land` moves
    /// it to this destination in the background.
    public var landingTo: String? = nil
}

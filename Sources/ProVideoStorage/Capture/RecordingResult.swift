/// A finished recording.
public struct RecordingResult: Sendable {
    /// Where the recording is: the destination, or a place in the pool when the destination
    /// could not take it.
    public var path: String
    /// Its length in bytes.
    public var length: Int64
    public var statistics: CaptureStatistics
}

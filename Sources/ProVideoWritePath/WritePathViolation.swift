import ProVideoSystem

/// A rule of the write path's state (`BufferRing`, `CommitPipeline`) found broken: the
/// capture that meets it fails with `.invariantViolated` (`CaptureWriter.failure(from:)`), the process and
/// its other captures go on. A `precondition` would end a multi-channel recorder with every
/// channel in it for one capture's bookkeeping; each capture's state is its own, so failing
/// that one capture cannot corrupt another.
struct WritePathViolation: Error {
    let problem: String

    init(_ problem: String) { self.problem = problem }
}

extension ProVideoError.Code {
    /// The write path found one of its own rules broken (a defect): the capture stopped.
    public static let invariantViolated = Self(rawValue: "invariantViolated")
}

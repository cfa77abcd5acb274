
extension Pool {
    /// The smallest capacity the CLI accepts, in bytes: one capture write at the default
    /// write size (`CaptureOptions.writeSize`, 4 MiB). A smaller reserve cannot take a single
    /// full write, so a capture would find it full at once.
    package static let minimumCapacity: Int64 = 4 << 20
}

/// The product's version, one for the library, the C API (`provideo_version()`, provideo.pc)
/// and the CLIs' `--version`.
package enum ProVideoStorageVersion {
    /// A static string so the C API can hand out its bytes without copying.
    package static let current: StaticString = "1.1.0"
}

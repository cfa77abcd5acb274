import Foundation
import Glibc
import ProVideoStorage

/// `metrics --output FILE`: the text written to a temporary file of its own in FILE's
/// directory, then renamed over FILE (rename(2) replaces it atomically), so a textfile
/// collector reading FILE at any moment sees the last whole file, never an empty or partial one,
/// and two writers (two timers, a timer and an administrator) never share a temporary.
enum MetricsFile {
    /// - Throws: `.ioError` naming FILE and the system's reason when the temporary cannot be
    ///   made or written, or cannot replace FILE.
    static func publish(_ text: String, at output: String) throws {
        let directory = (output as NSString).deletingLastPathComponent
        // A hidden name ending in mkstemp's six random characters: node_exporter reads only
        // `*.prom`, so it never reads a temporary.
        var template = Array(((directory.isEmpty ? "" : directory + "/") + "." + (output as NSString).lastPathComponent
                              + ".XXXXXX").utf8CString)
        let fd = mkstemp(&template)
        guard fd >= 0 else { throw failure(errno, output, "cannot make a temporary file in \(directory.isEmpty ? "." : directory)") }
        // mkstemp filled in the name; the array still ends in its NUL.
        let temporary = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var published = false
        defer {
            close(fd)
            if !published { unlink(temporary) }
        }
        // mkstemp makes it 0600; the collector may run as another user, and the old file was 0644.
        guard fchmod(fd, 0o644) == 0 else { throw failure(errno, output, "cannot set the temporary file's mode") }
        let bytes = Array(text.utf8)
        var written = 0
        while written < bytes.count {
            let n = bytes[written...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw failure(errno, output, "cannot write \(temporary)") }
            written += n
        }
        guard rename(temporary, output) == 0 else { throw failure(errno, output, "cannot rename \(temporary) over it") }
        published = true
    }

    /// `code` first, so that it is the errno of the failed call, read before the message is built.
    private static func failure(_ code: Int32, _ output: String, _ step: String) -> ProVideoError {
        ProVideoError(.ioError, "cannot write the metrics to \(output): \(step): \(String(cString: strerror(code)))",
                      errno: code, path: output)
    }
}

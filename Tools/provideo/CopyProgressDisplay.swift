import CommandLineSupport
import Foundation
import ProVideoStorage

/// Shows the library's copies to another filesystem (`CopyProgress`) as progress lines:
/// "copying to the destination's filesystem", then "verifying the copy" (the recording and
/// the copy read back, twice the length).
final class CopyProgressDisplay: @unchecked Sendable {
    private let lock = NSLock()
    private var line: ProgressLine?
    private var step: CopyProgress.Step?
    /// While verifying: bytes of the first file read, once the second file is being read.
    private var verifiedBefore: Int64 = 0
    private var lastDone: Int64 = 0

    /// Starts showing copies until `stop()`.
    static func start() -> CopyProgressDisplay {
        let display = CopyProgressDisplay()
        CopyProgress.observe { step, done, total in display.update(step, done, total) }
        return display
    }

    /// Stops observing and ends the line of the last step; a second call does nothing.
    func stop() {
        CopyProgress.observe(nil)
        lock.withLock {
            line?.finish()
            line = nil
        }
    }

    private func update(_ step: CopyProgress.Step, _ done: Int64, _ total: Int64) {
        lock.withLock {
            if step != self.step {
                line?.finish()
                self.step = step
                verifiedBefore = 0
                line = step == .copying ? ProgressLine("copying to the destination's filesystem", total: total)
                    : ProgressLine("verifying the copy", total: 2 * total)
            } else if step == .verifying && done < lastDone {
                verifiedBefore = total  // the recording is read; now the copy
            }
            lastDone = done
            line?.update(verifiedBefore + done)
        }
    }
}

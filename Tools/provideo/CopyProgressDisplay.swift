import CommandLineSupport
import Foundation
import ProVideoStorage

/// Shows a copy to another filesystem as progress lines, through the control handed to the
/// call that copies (`control`): "copying to the destination's filesystem", then "verifying
/// the copy" (the recording and the copy read back, twice the length).
final class CopyProgressDisplay: @unchecked Sendable {
    private let lock = NSLock()
    private var line: ProgressLine?
    private var step: OperationControl.Step?
    /// While verifying: bytes of the first file read, once the second file is being read.
    private var verifiedBefore: Int64 = 0
    private var lastDone: Int64 = 0

    /// The control to hand to the call whose copies this shows.
    var control: OperationControl {
        OperationControl(observer: { [self] step, done, total in update(step, done, total) })
    }

    /// Ends the line of the last step; a second call does nothing.
    func stop() {
        lock.withLock {
            line?.finish()
            line = nil
        }
    }

    private func update(_ step: OperationControl.Step, _ done: Int64, _ total: Int64) {
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

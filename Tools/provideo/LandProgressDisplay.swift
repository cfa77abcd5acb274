import CommandLineSupport
import Foundation
import ProVideoStorage

/// Shows `land`'s transfers as progress lines on standard error (`ProgressLine`: one line
/// redrawn on a terminal, a line every few seconds in a log): "landing DEST", then "verifying
/// DEST" while the copy is read back. With `--parallel`, one take is shown at a time: the first
/// to report, until its attempt ends; a line that ends short (a failure, a stop) says where.
final class LandProgressDisplay: @unchecked Sendable {
    private let lock = NSLock()
    /// The destination whose transfer the line shows.
    private var shown: String?
    private var step: OperationControl.Step?
    private var line: ProgressLine?
    private var lastDone: Int64 = 0

    /// The observer to hand to `Pool.landPending`.
    var observer: LandingObserver {
        { [self] destination, step, done, total in update(destination, step, done, total) }
    }

    private func update(_ destination: String, _ step: OperationControl.Step?, _ done: Int64, _ total: Int64) {
        lock.withLock {
            guard shown == nil || shown == destination else { return }
            guard let step else {
                line?.finish(at: lastDone)
                (shown, self.step, line) = (nil, nil, nil)
                return
            }
            if shown == nil || step != self.step {
                line?.finish(at: lastDone)
                var fresh = ProgressLine("\(step == .copying ? "landing" : "verifying") \(destination.terminalSafe)", total: total)
                // A resumed copy reports where it starts first: only what follows counts for the rate.
                if step == .copying { fresh.baseline = done }
                (shown, self.step, line) = (destination, step, fresh)
            }
            lastDone = done
            line?.update(done)
        }
    }
}

import Glibc
import ProVideoSystem
import ProVideoJournal

/// The pool's captures as their claims and journals show them now: the ones whose owner is
/// alive, with their journals, and the ones that may be alive and cannot be counted. A value
/// the start (admission, one destination per take) and `status` decide on.
struct CaptureCensus {
    typealias Running = (files: CaptureFiles, journal: CaptureJournal)

    /// The captures whose owner is alive, in this process or another (one still writing its
    /// first journal, or removing its files, is not counted), with their journals.
    let running: [Running]
    /// The entries of `captures/` that may be alive and cannot be counted.
    let undecided: [UndecidedCapture]

    /// The captures whose owner is alive, with their journals, and the entries of `captures/`
    /// that may be alive and cannot be counted: their liveness cannot be read (a stray file or
    /// link, EMFILE), or their journal cannot. Neither list is a reason to refuse the pool;
    /// admission counts the second as bandwidth unknown (`admit`).
    /// - Throws: `.ioError` when `captures/` cannot be listed.
    static func take(of layout: PoolLayout, _ calls: SystemCalls) throws -> CaptureCensus {
        var running: [Running] = []
        var undecided: [UndecidedCapture] = []
        for files in try layout.captureFiles() {
            switch CaptureClaim.liveness(files, calls) {
            case .dead: continue
            case .unknown(let error):
                undecided.append(UndecidedCapture(id: files.id, reason: "whether its recorder is alive cannot be read (\(error.message))"))
            case .alive:
                do {
                    running.append((files, try CaptureJournal.load(files.journal)))
                } catch let error as ProVideoError where error.errno == ENOENT {
                    continue
                } catch {
                    let message = (error as? ProVideoError)?.message ?? "\(error)"
                    undecided.append(UndecidedCapture(id: files.id, reason: "its recorder is alive and its journal cannot be read (\(message))"))
                }
            }
        }
        return CaptureCensus(running: running, undecided: undecided)
    }
}

/// An entry of `captures/` that may be a live capture and cannot be read: status, metrics and
/// check name it, admission counts its bandwidth as unknown, recovery leaves it.
package struct UndecidedCapture: Codable, Sendable, Equatable {
    /// Its name in `captures/`.
    package var id: String
    /// Why it cannot be decided on.
    package var reason: String
}

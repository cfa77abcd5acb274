import ProVideoSystem
import Synchronization

/// The memory of the capture rings of this process, kept when a capture ends for the next one to
/// start. A fresh ring's pages are all faulted in at its start (`AlignedBuffer`), which on a
/// virtual machine asks the hypervisor for each huge page: measured here (`perf record` of
/// `provideo-bench --streams 4 --bitrate 880M --mode pool --in-place`), 93 % of the run's CPU
/// was `clear_page_erms` under `MADV_POPULATE_WRITE`, about 4.7 CPU-seconds for four rings of
/// 327 MB, and a recorder that switches takes paid it again at every take. A kept ring is
/// zeroed before it is handed out again (a pass over resident pages, tens of milliseconds), so
/// no take holds another's bytes, as a fresh mapping would not.
package enum RingMemory {
    /// Rings no capture uses, the oldest first.
    private static let idle = Mutex<[AlignedBuffer]>([])
    /// The most bytes kept idle: three rings of 880 Mbit/s (three seconds each).
    private static let idleLimit = 1 << 30

    /// A ring of exactly `length` bytes aligned to `alignment`: a kept one, zeroed, or a fresh
    /// `AlignedBuffer`; nil when none can be mapped.
    package static func take(length: Int, alignment: Int) -> AlignedBuffer? {
        let kept = idle.withLock { rings -> AlignedBuffer? in
            guard let index = rings.firstIndex(where: { $0.bytes.count == length && $0.isAligned(to: alignment) }) else {
                return nil
            }
            return rings.remove(at: index)
        }
        guard let kept else { return AlignedBuffer(length: length, alignment: alignment) }
        kept.zero()
        return kept
    }

    /// Keeps `ring` for a later `take`, which no request in flight may still read or write
    /// (its engine has finished with it); the oldest rings are let go beyond `idleLimit`.
    package static func give(_ ring: AlignedBuffer) {
        // The evicted rings are returned and unmapped when the result is dropped, after the lock
        // is let go: a munmap of a gigabyte takes milliseconds another capture's `take` need not
        // wait for.
        _ = idle.withLock { rings -> [AlignedBuffer] in
            rings.append(ring)
            var total = rings.reduce(0) { $0 + $1.bytes.count }
            var evicted: [AlignedBuffer] = []
            while total > idleLimit, let oldest = rings.first {
                total -= oldest.bytes.count
                evicted.append(rings.removeFirst())
            }
            return evicted
        }
    }

    /// Rings of `length` bytes kept idle now.
    package static func idleCount(length: Int) -> Int { idle.withLock { $0.filter { $0.bytes.count == length }.count } }
}

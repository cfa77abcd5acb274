import Glibc
import Synchronization
import ProVideoSystem

/// A landing budget for a fleet of servers landing onto one shared store, kept on the store
/// itself with what its filesystem already gives, no coordinator of our own (issue 43): at most
/// `slots` transfers at once across every lander that names the same `file`, each holding an
/// OFD byte-range lock (fcntl(2) `F_OFD_SETLK`) on one byte of it (byte i for slot i), and a
/// fleet byte rate shared evenly among the holders. On GlusterFS the locks translator keeps
/// byte-range locks for every client and drops a client's when it disconnects; a lander killed
/// while holding a slot lets go with its last descriptor (Docs/FLEET.md says why, and where
/// CephFS and NFSv4 differ).
package final class FleetSlots: Sendable {
    /// The slots file, on the shared store (it is made, empty, when missing).
    package let file: String
    /// Transfers the whole fleet may run at once.
    package let slots: Int
    /// Bytes per second the fleet's transfers may write together; nil for no fleet cap.
    package let rate: Int64?
    /// Each holder's share of `rate`, probed at most once a second (`share`).
    private let lastShare = Mutex<(bytesPerSecond: Int64, at: UInt64)?>(nil)

    /// The most slots a fleet may have: far above any store's useful concurrency, and few
    /// enough probes (one `F_OFD_GETLK` each) for a share.
    package static let maximumSlots = 1024

    /// - Throws: `.invalidArgument` for slots outside 1…`maximumSlots` or a rate below 1 byte
    ///   per second; the open's error when `file` cannot be opened (or made) for writing: a
    ///   budget that cannot be read is not applied by guessing.
    package init(file: String, slots: Int, rate: Int64?) throws {
        guard (1...Self.maximumSlots).contains(slots) else {
            throw ProVideoError(.invalidArgument, "a fleet has 1 to \(Self.maximumSlots) slots, not \(slots)")
        }
        if let rate, rate < 1 { throw ProVideoError(.invalidArgument, "a fleet rate is at least 1 byte per second") }
        (self.file, self.slots, self.rate) = (file, slots, rate)
        _ = try Self.open(file)
    }

    /// One slot, held for as long as this value lives: its own open file description holds the
    /// lock, so the kernel (or the store, for a dead client) lets go when it is gone.
    package final class Held {
        let descriptor: FileDescriptor
        /// The slot's number, 0 ..< `slots`.
        package let index: Int

        init(_ descriptor: FileDescriptor, index: Int) { (self.descriptor, self.index) = (descriptor, index) }
    }

    /// Takes a free slot, trying them from a random one (so that landers do not all probe slot
    /// 0 first); nil when every slot is held, by this server or another.
    /// - Throws: the open's or a lock's error (`EIO`, `ENOLCK` where the store keeps no locks).
    func tryAcquire() throws -> Held? {
        let descriptor = try Self.open(file)
        let first = Int.random(in: 0..<slots)
        for step in 0..<slots {
            let index = (first + step) % slots
            if try descriptor.lock(Int64(index), 1, wait: false) { return Held(descriptor, index: index) }
        }
        return nil
    }

    /// Slots held now across the fleet (this server's included): each probed with
    /// `F_OFD_GETLK` through a descriptor of its own, which every holder's lock conflicts with.
    func holders() throws -> Int {
        let probe = try Self.open(file)
        var held = 0
        for index in 0..<slots where try probe.isLockedByOthers(Int64(index), 1) { held += 1 }
        return held
    }

    /// A holder's share of the fleet rate, in bytes per second: `rate` divided among the slots
    /// held now (at least this one). Probed at most once a second; a probe that fails keeps the
    /// last share, or, with none yet, the smallest one (`rate` over every slot): an unknown count
    /// of holders never lets a transfer take more than its part could be.
    package func share() -> Int64? {
        guard let rate else { return nil }
        let now = MonotonicTime.now()
        if let last = lastShare.withLock({ $0 }), now - last.at < 1_000_000_000 { return last.bytesPerSecond }
        let bytesPerSecond: Int64
        do {
            bytesPerSecond = max(rate / Int64(max(try holders(), 1)), 1)
        } catch {
            return lastShare.withLock { $0?.bytesPerSecond } ?? max(rate / Int64(slots), 1)
        }
        lastShare.withLock { $0 = (bytesPerSecond, now) }
        return bytesPerSecond
    }

    private static func open(_ file: String) throws -> FileDescriptor {
        // 0666 less the umask: landers of every server, as whichever user runs them, share it.
        try FileDescriptor.open(file, O_RDWR | O_CREAT | O_NOFOLLOW, mode: 0o666)
    }
}

import Foundation
import ProVideoStorage

/// What `status` and `land` say about the I/O scheduler of the pool's disk: whether the idle
/// I/O priority a landing runs at keeps it out of the captures' way (Docs/LANDING.md).
enum SchedulerLines {
    /// One line per disk under the pool, for `status` (none on tmpfs or overlayfs).
    static func status(_ status: PoolStatus) -> [String] {
        (status.ioSchedulers ?? []).enumerated().map { index, scheduler in
            (index == 0 ? "scheduler   " : "            ") + describe(scheduler, advice: rateAdvice(status.bandwidth))
        }
    }

    /// A note for `land`, on standard error, naming the scheduler of each disk under the pool
    /// and what it does with the landing's I/O; nil on a filesystem without a block device.
    /// - Parameters:
    ///   - capped: `--rate` was given: no advice to give one.
    ///   - bandwidth: the pool's, in bits per second, for the rate to suggest.
    static func landNote(_ schedulers: [IOScheduler], capped: Bool, bandwidth: Int64?) -> String? {
        guard !schedulers.isEmpty else { return nil }
        let advice = capped ? "; the landing is capped by --rate" : rateAdvice(bandwidth)
        return "note: landing at idle I/O priority on "
            + schedulers.map { describe($0, advice: advice) }.joined(separator: "; ")
    }

    /// "mq-deadline (vda): holds the landing's idle-priority I/O back while other I/O waits, up
    /// to 10 s a request (prio_aging_expire)". `advice` follows a scheduler that ignores it.
    static func describe(_ scheduler: IOScheduler, advice: String) -> String {
        let name = "\(scheduler.name) (\(scheduler.disk))"
        switch scheduler.idlePriority {
        case .honoured:
            return name + ": serves the landing's idle-priority I/O only when no other I/O waits"
        case .heldBack:
            let aging = scheduler.agingSeconds.map { String(format: "%g s", $0) } ?? "a while"
            return name + ": holds the landing's idle-priority I/O back while other I/O waits, "
                + "up to \(aging) a request (prio_aging_expire)"
        case .ignored:
            return name + ": ignores I/O priorities, so a landing competes with captures for the disk" + advice
        case .unknown:
            return name
        }
    }

    /// "; cap it with `provideo land --rate 200M`": the share of the pool's bandwidth captures are
    /// not admitted to (`CaptureAdmission.admissibleShare`), else no figure.
    static func rateAdvice(_ bandwidth: Int64?) -> String {
        guard let bandwidth, bandwidth > 0 else {
            return "; cap it with `provideo land --rate RATE` (bits per second: 400M is 50 MB/s)"
        }
        let share = 1 - CaptureAdmission.admissibleShare
        let spare = Int64(checked: Double(bandwidth) * share) ?? 0
        return "; cap it with `provideo land --rate \(max(spare / 1_000_000, 1))M` or less (the "
            + "\(Int(checked: (share * 100).rounded()) ?? 0)% of the pool's \(BitRateFormat.human(bandwidth)) captures are not admitted to)"
    }
}

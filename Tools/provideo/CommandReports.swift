import ProVideoStorage

/// What `--json` prints for the commands that change a pool. Sizes in bytes.
enum CommandReports {
    /// `create` and `resize`.
    struct Capacity: Encodable {
        var path: String
        var initialCapacity: Int64
        var zeroFilled: Bool?
        /// `create`: the bandwidth captures are admitted against, in bits per second.
        var bandwidth: Int64?
        /// `create`: how many captures may run at once (absent: no limit).
        var maxCaptures: Int?
        /// `create` without --bandwidth: what the measurement found (absent: not measured).
        var measurement: BandwidthMeasurement?
        /// `create`: how grants move the reserve's space (`GrantMethod`'s name), as probed.
        var grants: String?
        /// `create`: the filesystem's online discard, what it costs and the remedies.
        var onlineDiscard: OnlineDiscard?
    }

    /// `replenish`.
    struct Replenish: Encodable {
        var path: String
        var added: Int64
        /// Bytes still short of the capacity (0: the reserve is whole again).
        var missing: Int64
        var remainingCapacity: Int64
    }

    /// `set-bandwidth`: in bits per second; both null after `set-bandwidth none`.
    struct Bandwidth: Encodable {
        var path: String
        /// The bandwidth captures are admitted against.
        var bandwidth: Int64?
        /// The share of it captures may declare together (`CaptureAdmission.admissibleShare`).
        var admissibleBitrate: Int64?

        init(path: String, bandwidth: Int64?) {
            self.path = path
            self.bandwidth = bandwidth
            admissibleBitrate = bandwidth.flatMap { Int64(checked: Double($0) * CaptureAdmission.admissibleShare) }
        }

        enum Key: String, CodingKey { case path, bandwidth, admissibleBitrate }

        /// Writes null rather than leaving the keys out, so a script reads "no bandwidth".
        func encode(to encoder: Encoder) throws {
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(path, forKey: .path)
            try container.encode(bandwidth, forKey: .bandwidth)
            try container.encode(admissibleBitrate, forKey: .admissibleBitrate)
        }
    }

    /// `recover`.
    struct Recover: Encodable {
        var path: String
        var salvaged: [SalvagedRecording]
        var discarded: [DiscardedCapture]
        /// Recordings salvaged by earlier commands (`provideo list` shows where they went);
        /// absent when the salvage log cannot be read (stderr says why).
        var recoveredEarlier: Int?
    }

    /// `check`: `ok` is false when `problems` is not empty (the exit status is then 1).
    struct Check: Encodable {
        var path: String
        var ok: Bool
        var problems: [String]
        /// The pool's filesystem discards online: not a problem of its accounting, what limits
        /// its streams; absent when it does not.
        var onlineDiscard: OnlineDiscard?
    }

    /// `destroy`.
    struct Destroy: Encodable {
        var path: String
        /// true when only what an interrupted destroy left was there to remove.
        var removedRemainsOnly: Bool
    }

    /// `move`: the held recording and where it is now.
    struct Move: Encodable {
        var held: String
        var path: String
    }

    /// `demo`, once the clip is checked.
    struct Demo: Encodable {
        var pool: String
        /// The demo created the pool (none was there).
        var poolCreated: Bool
        var clip: String
        var length: Int64
        /// Frames ffprobe decoded from the clip, and the frames ffmpeg was asked for.
        var frames: Int
        var expectedFrames: Int
        /// The clip was copied to its destination (another filesystem) rather than renamed out
        /// of the reserve.
        var copied: Bool
        var remainingCapacityBefore: Int64
        var remainingCapacityAfter: Int64
    }

    /// `record`'s summary.
    struct Record: Encodable {
        var path: String
        var length: Int64
        /// From the first byte of input to its end.
        var seconds: Double
        /// The input's rate over `seconds`, in bits per second.
        var inputBitrate: Int64
        /// true when the destination is on another filesystem: copied and verified, not renamed.
        var copiedAndVerified: Bool
        var engine: String
        var appends: Int64
        var overruns: Int64
        var shortWritesRetried: Int64
        var commits: Int64
        var appendLatencyP99Nanoseconds: UInt64
        /// The longest append, refused ones included: how long the input was held up at worst.
        var appendLatencyMaxNanoseconds: UInt64
        var droppedBytes: Int64
        /// Reads refused with `--overrun fail` (each a gap of `droppedBytes` in total).
        var droppedReads: Int
        var storageFull: Bool
        var stoppedBySignal: Bool
        /// After a take renamed on the pool's filesystem (whose space came out of the reserve),
        /// and after `--replenish`; absent for a take copied to another filesystem or landing.
        var remainingCapacity: Int64?
        /// `--replenish`: bytes it added back to the reserve.
        var replenishedBytes: Int64?
    }
}

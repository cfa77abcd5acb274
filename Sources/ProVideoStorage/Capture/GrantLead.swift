
/// How far ahead of its write head a capture's file is kept granted (issue 44): the granter
/// asks for a grant once less than `ask` bytes are granted beyond the head, and grants up to
/// `fill` bytes beyond the head as it was when it asked.
///
/// `ask` is the stream of twice the slowest recent grant of the pool's captures
/// (`SlowestGrant`), at least `minimumTime` and at most `maximumTime` of stream at the
/// capture's declared bitrate, and at most an eighth of the reserve's free room shared among
/// the running captures, but never less than two grant steps: a grant as slow as the slowest
/// lands with half of `ask` still ahead. `fill` is `ask` and the stream of one such grant more
/// (at most half that share more), so that such
/// a grant lands with `ask` ahead and the next is not asked for at once: with `fill` equal to
/// `ask`, the granter of a steadily slow filesystem was in fallocate back to back, and on ext4
/// each fallocate pauses the capture's writes (`inode_dio_wait`).
///
/// In time, not in steps: two steps were four seconds of stream, and a grant slower than that
/// (a fallocate waits for the filesystem's journal: up to 3.7 s without online discard and
/// 8.5 s with it near the disk's limit, Docs/BENCHMARKS.md) refused frames while the disk kept
/// up; the step grew only after such a grant, and only for the capture that made it. At most
/// an eighth of the room the reserve had free when the capture last claimed, divided among
/// the captures running then, not an eighth of the pool: eight captures that each held an
/// eighth of a 64 MiB pool ahead held all of it, and one ended `storageFull` with 30 MB of the
/// pool held unwritten in the others' leads (the stress CI). As the reserve empties or more
/// captures start, the leads shrink, to two steps; on a pool tens of times the streams' lead,
/// the share never binds.
struct GrantLead: Equatable {
    /// Bytes: a grant is asked for when less than this is granted beyond the head.
    let ask: Int64
    /// Bytes: a grant brings the granted end this far beyond the head as it was at the ask.
    let fill: Int64

    /// The least `ask`, in nanoseconds of stream: the default of two steps of two seconds.
    static let minimumTime: UInt64 = 4_000_000_000
    /// The most, in nanoseconds of stream: twice the slowest grant measured (8.5 s, discard).
    static let maximumTime: UInt64 = 16_000_000_000

    /// The lead for a capture granted `step` bytes at a time at `bitrate` (bits per second)
    /// from a reserve with `room` bytes free (claims in flight counted out) that `sharers`
    /// running captures share, when the slowest recent grant took `slowestGrant` nanoseconds
    /// (0: none yet).
    init(step: Int64, bitrate: Int64, room: Int64, sharers: Int, slowestGrant: UInt64) {
        let slowest = min(slowestGrant, Self.maximumTime / 2)
        let time = min(max(2 * slowest, Self.minimumTime), Self.maximumTime)
        let eighth = max(room, 0) / 8 / Int64(max(sharers, 1))
        let steps = step > Int64.max / 4 ? Int64.max / 2 : 2 * max(step, 0)
        ask = max(min(Self.streamBytes(time, bitrate: bitrate), eighth), steps)
        fill = ask + min(Self.streamBytes(slowest, bitrate: bitrate), eighth / 2)
    }

    /// The bytes `nanoseconds` of stream hold at `bitrate`: 0 for no bitrate.
    static func streamBytes(_ nanoseconds: UInt64, bitrate: Int64) -> Int64 {
        guard bitrate > 0 else { return 0 }
        let bytes = Double(bitrate) / 8 * Double(nanoseconds) / 1e9
        return bytes >= Double(Int64.max / 4) ? Int64.max / 4 : Int64(bytes)
    }
}

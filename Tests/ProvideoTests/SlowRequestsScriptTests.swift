import Foundation
import TestSupport
import Testing

/// Tools/mount-bench/slow-requests.py, which splits a capture mount's slow write requests from
/// a `perf script` trace (Docs/BENCHMARKS.md, "Where the mount's slow requests go, traced"), on
/// a trace written here with every time known.
struct SlowRequestsScriptTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Tools/mount-bench/slow-requests.py").path

    static func send(_ time: String, request: Int, connection: Int = 40, opcode: String = "16 (FUSE_WRITE)") -> String {
        "  provideo-bench  4422 \(time):    fuse:fuse_request_send: connection \(connection) req \(request) opcode \(opcode) len 1048656 "
    }

    static func end(_ time: String, request: Int, thread: Int, connection: Int = 40) -> String {
        "        provideo  \(thread) \(time):    fuse:fuse_request_end: connection \(connection) req \(request) len 24 error 0"
    }

    static func switchOut(_ time: String, thread: Int, state: String, to next: Int) -> String {
        "        provideo  \(thread) \(time):        sched:sched_switch: prev_comm=provideo prev_pid=\(thread) prev_prio=120 "
            + "prev_state=\(state) ==> next_comm=other next_pid=\(next) next_prio=120"
    }

    static func switchIn(_ time: String, thread: Int, from previous: Int) -> String {
        "           other  \(previous) \(time):        sched:sched_switch: prev_comm=other prev_pid=\(previous) prev_prio=120 "
            + "prev_state=S ==> next_comm=provideo next_pid=\(thread) next_prio=120"
    }

    static func readReturned(_ time: String, thread: Int) -> String {
        "        provideo  \(thread) \(time):    syscalls:sys_exit_read: 0x100050"
    }

    /// A 60 ms write: its thread asleep until 5 ms in, its read back at 30 ms, preempted from
    /// 40 to 50 ms, the answer at 60 ms. A second mount reusing the connection's number and the
    /// request's, whose same-numbered request takes 1 ms, and a slow non-write, are left out.
    @Test func aSlowWriteIsSplitAtTheDaemonsRead() throws {
        let trace = [
            Self.switchOut("100.990000", thread: 200, state: "S", to: 300),
            Self.send("101.000000", request: 8),
            Self.switchIn("101.005000", thread: 200, from: 300),
            Self.readReturned("101.030000", thread: 200),
            Self.switchOut("101.040000", thread: 200, state: "R", to: 301),
            Self.switchIn("101.050000", thread: 200, from: 301),
            Self.end("101.060000", request: 8, thread: 200),
            Self.send("102.000000", request: 10, opcode: "20 (FUSE_FSYNC)"),
            Self.end("102.050000", request: 10, thread: 200),
            Self.send("103.000000", request: 8),
            Self.readReturned("103.000500", thread: 201),
            Self.end("103.001000", request: 8, thread: 201),
        ].joined(separator: "\n") + "\n"
        try TestSupport.withScratch { scratch in
            let path = scratch + "/trace.txt"
            try trace.write(toFile: path, atomically: true, encoding: .utf8)
            let result = try TestSupport.run("/usr/bin/python3", [Self.script, path, "--over", "10"])
            #expect(result.status == 0, "\(result.stderr)")
            let lines = result.stdout.split(separator: "\n").map(String.init)
            #expect(lines.first == "1 FUSE_WRITE requests over 10 ms, of 2", "\(result.stdout)")
            let row = lines.last?.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            #expect(row == ["8", "60.0", "30.0", "30.0", "10.0", "5.0"], "\(result.stdout)")
        }
    }
}

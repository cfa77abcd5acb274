#!/usr/bin/env python3
"""Where a capture mount's slow write requests spent their time, from the kernel's own FUSE
tracepoints (fuse:fuse_request_send/end, in kernels that have them: 6.18 here) and the scheduler's events.

    perf record -a -e fuse:fuse_request_send,fuse:fuse_request_end,sched:sched_switch,\
sched:sched_wakeup,syscalls:sys_exit_read -o trace.data -- sleep 40
    perf script -i trace.data -F comm,tid,time,event,trace > trace.txt
    slow-requests.py trace.txt [--over MS]

Each FUSE_WRITE that took longer than --over (default 10 ms) from the writer's request to the
daemon's answer is split into: until the daemon thread that answered it returned from its
read(2) of /dev/fuse (waking up, then the kernel copying the request's payload out of the
writer's pinned pages), from there to the answer (libfuse's dispatch and the capture's
write), and how much of the request's time that thread was off the CPU: runnable but not
running (preempted) or asleep (blocked: a lock, the disk, a buffer). Run as root.
"""
import argparse, collections, re

EVENT = re.compile(r'\s*(\S.*?)\s+(\d+)\s+([\d.]+):\s+(\S+):\s*(.*)')
SWITCH = re.compile(r'prev_pid=(\d+).*prev_state=(\S+) ==> .*next_pid=(\d+)')


def request(fields):
    """A request's identity: its connection (each mount's) and its number there."""
    return tuple(map(int, re.search(r"connection (\d+) req (\d+)", fields).groups()))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("trace")
    parser.add_argument("--over", type=float, default=10.0, help="milliseconds")
    args = parser.parse_args()
    events = [(float(m.group(3)), m.group(4), int(m.group(2)), m.group(5))
              for m in map(EVENT.match, open(args.trace)) if m]
    # In time order: a mount made after another may reuse its connection's number.
    sent, requests = {}, []
    for time, name, tid, rest in events:
        if name == "fuse:fuse_request_send":
            sent[request(rest)] = (time, re.search(r"\((\w+)\)", rest).group(1))
        elif name == "fuse:fuse_request_end" and request(rest) in sent:
            start, opcode = sent.pop(request(rest))
            requests.append((request(rest)[1], opcode, start, time, tid))
    daemon = {tid for *_, tid in requests}
    reads, switches = collections.defaultdict(list), collections.defaultdict(list)
    for time, name, tid, rest in events:
        if name == "syscalls:sys_exit_read" and tid in daemon:
            reads[tid].append(time)
        elif name == "sched:sched_switch":
            out, state, into = SWITCH.search(rest).groups()
            switches[int(out)].append((time, state))
            switches[int(into)].append((time, None))
    rows = []
    for unique, opcode, start, end, tid in requests:
        if opcode != "FUSE_WRITE" or (end - start) * 1000 < args.over:
            continue
        returned = [t for t in reads[tid] if start <= t <= end]
        read_done = returned[-1] if returned else None
        # Off the CPU, from a switch out to the next switch in: runnable (state R, preempted)
        # or blocked (S, D: waiting for a lock, the disk, a buffer).
        preempted = blocked = 0.0
        since, state = None, None
        for time, out_state in switches[tid]:
            if time > end:
                break
            if out_state is not None:
                since, state = time, out_state
            elif since is not None:
                span = max(0.0, time - max(since, start))
                if state.startswith("R"):
                    preempted += span
                else:
                    blocked += span
                since = None
        rows.append((end - start, unique, read_done, end, start, preempted, blocked))
    rows.sort(reverse=True)
    print(f"{len(rows)} FUSE_WRITE requests over {args.over:g} ms, of "
          f"{sum(1 for _, opcode, *_ in requests if opcode == 'FUSE_WRITE')}")
    print("request  total ms  until read(2) returned ms  read returned → answer ms  preempted ms  blocked ms")
    for total, unique, read_done, end, start, preempted, blocked in rows:
        until = f"{(read_done - start) * 1000:.1f}" if read_done else "-"
        after = f"{(end - read_done) * 1000:.1f}" if read_done else "-"
        print(f"{unique:<8} {total * 1000:<9.1f} {until:<26} {after:<26} {preempted * 1000:<13.1f} {blocked * 1000:.1f}")


if __name__ == "__main__":
    main()

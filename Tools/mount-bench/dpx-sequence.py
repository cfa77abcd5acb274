#!/usr/bin/env python3
"""A film scanner's DPX sequence into a directory (a capture mount): one file per frame, each
created, written in one write(2) and closed on a real-time clock; prints the per-file
create+write+close latency percentiles and the frames late (finished after the next was due).

    dpx-sequence.py DIR [--size BYTES] [--fps FPS] [--seconds S]
"""
import argparse, os, time

def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("directory")
    parser.add_argument("--size", type=int, default=12_746_752)  # 4096x3112 10-bit DPX
    parser.add_argument("--fps", type=float, default=24)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--remove", action="store_true", help="remove each file after it is written")
    args = parser.parse_args()
    frame = os.urandom(args.size)
    interval = 1 / args.fps
    count = int(args.seconds * args.fps)
    start = time.monotonic() + 0.1
    spent, opens, late = [], [], 0
    for i in range(count):
        due = start + i * interval
        now = time.monotonic()
        if due > now:
            time.sleep(due - now)
        began = time.monotonic()
        path = os.path.join(args.directory, f"frame{i:07d}.dpx")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        opened = time.monotonic()
        view = memoryview(frame)
        while view:
            view = view[os.write(fd, view):]
        os.close(fd)
        ended = time.monotonic()
        spent.append(ended - began)
        opens.append(opened - began)
        if ended > due + interval:
            late += 1
        if args.remove:
            os.unlink(path)
    def pct(values, p):
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, int(len(ordered) * p))] * 1000
    print(f"{count} files of {args.size} bytes at {args.fps} fps: create+write+close "
          f"p50 {pct(spent, .5):.1f} p99 {pct(spent, .99):.1f} p99.9 {pct(spent, .999):.1f} max {max(spent) * 1000:.1f} ms; "
          f"create alone p50 {pct(opens, .5):.1f} p99.9 {pct(opens, .999):.1f} ms; {late} late")

if __name__ == "__main__":
    main()

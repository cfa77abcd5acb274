#!/usr/bin/python3
"""Proves the premise of the harness on this kernel: a loop device over a logfs image hands
logfs every write in the order it was made, and each flush as an fsync between them.

Writes A (at 0) and B (at 1 MiB) with O_DIRECT to the loop device, flushes it (fsync on a block
device is REQ_PREFLUSH), writes C (at 2 MiB), flushes again, and checks that the log holds
exactly A, B, flush, C, flush (the kernel may split a write; the pieces must be contiguous and
in order). Prints "ok" and exits 0, or says what differed and exits 1.
"""
import mmap
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import powerlog  # noqa: E402
import rig  # noqa: E402

MIB = 1 << 20


def direct_write(device, offset, fill, length=256 << 10):
    buffer = mmap.mmap(-1, length)  # page aligned, as O_DIRECT needs
    buffer.write(bytes([fill]) * length)
    fd = os.open(device, os.O_WRONLY | os.O_DIRECT)
    try:
        os.pwritev(fd, [buffer], offset)
    finally:
        os.close(fd)


def flush(device):
    fd = os.open(device, os.O_WRONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def summary(records):
    """The log as ("W", offset, fill, length) and ("F",), merging split pieces of one write."""
    blob = open(records[1], "rb").read()
    out = []
    for record in records[0]:
        if record.kind == "F":
            out.append(("F",))
        elif record.kind == "W":
            data = blob[record.at:record.at + record.length]
            fill = data[0] if data == bytes([data[0]]) * len(data) else None
            last = out[-1] if out else None
            if last and last[0] == "W" and last[2] == fill and last[1] + last[3] == record.offset:
                out[-1] = ("W", last[1], fill, last[3] + record.length)
            else:
                out.append(("W", record.offset, fill, record.length))
    return out


def main():
    os.makedirs("/tmp/provideo-powerloss", exist_ok=True)
    workdir = tempfile.mkdtemp(prefix=f"{os.getpid()}-selftest-", dir="/tmp/provideo-powerloss")
    backing, log = os.path.join(workdir, "backing"), os.path.join(workdir, "log")
    with open(backing, "wb") as file:
        file.truncate(8 * MIB)
    with rig.Cleanup() as cleanup:
        cleanup.push(lambda: rig.sh(f"rm -rf {workdir}", check=False))
        rig.start_logfs(os.path.join(workdir, "fuse"), log, {"img": backing}, cleanup)
        device = rig.attach(os.path.join(workdir, "fuse", "img"), cleanup)
        direct_write(device, 0, 0xA1)
        direct_write(device, MIB, 0xB2)
        flush(device)
        direct_write(device, 2 * MIB, 0xC3)
        flush(device)
        rig.sh(f"losetup -d {device}")
        got = summary((powerlog.read(log), log))
    # A flush with nothing to flush may be logged too (one comes when the loop device is set
    # up); the writes, their order and the flushes between them may not vary.
    squeezed = [entry for i, entry in enumerate(got) if entry != ("F",) or (i > 0 and got[i - 1] != ("F",))]
    expected = [("W", 0, 0xA1, 256 << 10), ("W", MIB, 0xB2, 256 << 10), ("F",), ("W", 2 * MIB, 0xC3, 256 << 10), ("F",)]
    if squeezed != expected:
        print(f"log differs:\n  got      {got}\n  expected {expected}")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

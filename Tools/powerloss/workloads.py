"""The pool operations the harness runs: each sets up (not replayed), marks `begin`, runs the
operation under test and marks what it promised. Replays cut only after `begin`."""
import json
import os
import threading
import time

MIB = 1 << 20


def dest(session, name, device=0):
    return os.path.join(session.mounts[device], "dest", name)


def create(s):
    s.mark("begin")
    s.run("create", "--capacity", "24M", "--bandwidth", "10G")
    s.mark_pool()


def resizing(capacity, target):
    """A workload: a pool of `capacity`, resized to `target` (grow or shrink)."""
    def workload(s):
        s.run("create", "--capacity", capacity, "--bandwidth", "10G")
        s.mark_pool()
        s.mark("begin")
        s.run("resize", target)
        s.mark_pool()
    return workload


resize_grow = resizing("16M", "32M")
resize_shrink = resizing("32M", "16M")


def replenish(s):
    s.run("create", "--capacity", "24M", "--bandwidth", "10G")
    taken = dest(s, "first.mov")
    s.record(taken, seed=11, length=3 * MIB, pace=0)
    s.mark_file(taken)
    s.mark_pool()
    s.mark("begin")
    s.run("replenish")
    s.mark_pool()


def capture_rename(s):
    s.run("create", "--capacity", "24M", "--bandwidth", "10G")
    s.mark("begin")
    target = dest(s, "take.mov")
    s.record(target, seed=21, length=2 * MIB + 12345)
    s.mark_file(target)
    s.mark_pool()


def capture_copy(s):
    s.run("create", "--capacity", "24M", "--bandwidth", "10G")
    s.mark("begin")
    target = dest(s, "take.mov", device=1)
    s.record(target, seed=31, length=2 * MIB + 777)
    s.mark_file(target)
    s.mark_pool()


def capture_pair(s):
    # Two captures at once in one pool: their grants from the one reserve interleave, and each
    # finish returns its unused grant while the other still records.
    s.run("create", "--capacity", "24M", "--bandwidth", "10G")
    s.mark("begin")
    targets = [dest(s, "left.mov"), dest(s, "right.mov")]
    recorders = [threading.Thread(target=s.record, args=(target, 71 + index, 2 * MIB + 4321 * (index + 1)))
                 for index, target in enumerate(targets)]
    for recorder in recorders:
        recorder.start()
    for recorder in recorders:
        recorder.join()
    for target in targets:
        s.mark_file(target)
    s.mark_pool()


def cancel(s):
    # `provideo record` cancels a capture that received no byte: the capture is started (the
    # reserve taken), then cancelled (the reserve comes back whole), and no file appears.
    s.run("create", "--capacity", "24M", "--bandwidth", "10G")
    s.mark("begin")
    target = dest(s, "empty.mov")
    s.record(target, seed=41, length=0, expect=1)
    s.mark("absent", path=target)
    s.mark_pool()


def salvage(s):
    s.run("create", "--capacity", "24M", "--bandwidth", "10G")
    s.mark("begin")
    target = dest(s, "killed.mov")
    s.record(target, seed=51, length=4 * MIB, kill_after=1.2)
    s.run("recover")
    s.mark_file(target)
    s.mark_pool()


def move_held(s):
    # A destination is checked when the capture starts; one that appears before the finish
    # makes finish() keep the recording in the pool (held), which `provideo move` then moves.
    s.run("create", "--capacity", "24M", "--bandwidth", "10G")
    occupied = dest(s, "occupied.mov")

    def occupy():
        time.sleep(0.3)
        with open(occupied, "wb") as file:
            file.write(b"not a recording: finish must not clobber me\n" * 100)
            file.flush()
            os.fsync(file.fileno())
    occupier = threading.Thread(target=occupy)
    occupier.start()
    s.record(occupied, seed=61, length=MIB + 999, expect=1)
    occupier.join()
    s.mark_file(occupied)
    held = json.loads(s.run("list", "--json").stdout)
    path = held["recordings"][0]["path"]
    s.mark("begin")
    moved = dest(s, "moved.mov")
    s.mark("stream", dest=moved, seed=61, length=MIB + 999)
    s.run("move", path, moved)
    s.mark_file(moved)
    s.mark_pool()


OPERATIONS = {
    "create": (create, 1),
    "resize-grow": (resize_grow, 1),
    "resize-shrink": (resize_shrink, 1),
    "replenish": (replenish, 1),
    "capture-rename": (capture_rename, 1),
    "capture-copy": (capture_copy, 2),
    "capture-pair": (capture_pair, 1),
    "cancel": (cancel, 1),
    "salvage": (salvage, 1),
    "move-held": (move_held, 1),
}

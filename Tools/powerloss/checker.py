"""Judges one replayed crash state, mounted where the recording had its filesystems.

`promises` are the markers logged before the cut (what had returned before the power went);
`upcoming` are the markers after it (what the operation in progress would have promised);
`streams` maps each destination to the bytes its capture was fed. Returns failures (strings).
"""
import glob
import json
import os
import subprocess

from stream import sha256, stream


def provideo(binary, pool, *arguments):
    env = {key: value for key, value in os.environ.items() if key not in ("PROVIDEO_FAULT", "PROVIDEO_CRASH_AT")}
    return subprocess.run([binary, "--pool", pool, *arguments], capture_output=True, text=True, env=env, timeout=120)


def check_pool(binary, pool, promises, upcoming, garbled=False):
    failures = []
    pool_marks = [m for m in promises if m["t"] == "pool"]
    if not os.path.exists(os.path.join(pool, "pool.json")):
        return [f"pool.json is missing after `{pool_marks[-1]}` was promised"] if pool_marks else []
    # status and check only look (they salvage nothing: Docs/SECURITY.md); recover places.
    kept = False
    for arguments in (["status", "--json"], ["recover"], ["check"]):
        result = provideo(binary, pool, *arguments)
        # A garbled sector may be a capture's only commit record: what it committed is unknown,
        # and recover keeps the capture, saying so (Docs/CAPTURE-LIFECYCLE.md). That is right
        # only where nothing was promised committed, which check_files sees.
        if garbled and arguments[0] == "recover" and result.returncode == 1 \
                and "so what it committed is unknown" in result.stderr:
            kept = True
        elif not (kept and arguments[0] == "check" and result.returncode == 1) and result.returncode != 0:
            failures.append(f"provideo {' '.join(arguments)} exited {result.returncode}: {result.stderr.strip()}")
    if kept:
        return failures  # the kept capture holds its grant: the capacity checks do not apply
    if failures:
        return failures
    status = json.loads(provideo(binary, pool, "status", "--json").stdout)
    # After recovery nothing is half done: no capture, nothing busy, and the capacity the pool
    # reports is the reserve's size (`check` compares it with the allocated blocks).
    if status["busyReasons"] or status.get("captures"):
        failures.append(f"after recover: busy {status['busyReasons']}, captures {status.get('captures')}")
    reserve = os.path.join(pool, "reserve")
    size = os.path.getsize(reserve) if os.path.exists(reserve) else 0
    if status["remainingCapacity"] != size:
        failures.append(f"remainingCapacity {status['remainingCapacity']} but the reserve holds {size} bytes")
    leftovers = [n for n in ("capture", "reserve.new", "pool.json.tmp") if os.path.exists(os.path.join(pool, n))]
    captures = os.path.join(pool, "captures")
    leftovers += [f"captures/{n}" for n in (os.listdir(captures) if os.path.isdir(captures) else [])]
    if leftovers:
        failures.append(f"after recover, left in the pool: {leftovers}")
    if not pool_marks:
        return failures
    # The capacity is the last one promised, or the one the operation in progress sets.
    allowed = {pool_marks[-1]["initial"]}
    following = [m["initial"] for m in upcoming if m["t"] == "pool"]
    if following:
        allowed.add(following[0])
    if status["initialCapacity"] not in allowed:
        failures.append(f"initialCapacity {status['initialCapacity']}, expected one of {sorted(allowed)}")
    # The reserve promised is still there: at least the last remaining capacity promised, or
    # what the operation in progress leaves (a capture takes some, a shrink gives some back).
    floor = pool_marks[-1]["remaining"]
    following = [m["remaining"] for m in upcoming if m["t"] == "pool"]
    if following:
        floor = min(floor, following[0])
    if status["remainingCapacity"] < floor:
        failures.append(f"remainingCapacity {status['remainingCapacity']} < {floor}, the capacity promised")
    return failures


def candidates(dest, pool):
    """Where a capture for `dest` may be after recovery: the destination, a recovered sibling
    (`take.recovered-<id>.mov`), or held in the pool."""
    stem, extension = os.path.splitext(dest)
    found = [dest] if os.path.exists(dest) else []
    found += glob.glob(glob.escape(stem) + ".recovered-*" + glob.escape(extension))
    found += [p for p in glob.glob(os.path.join(pool, "recordings", "*")) if not p.endswith(".json")]
    return found


def check_files(pool, promises, streams):
    failures = []
    exact = {}
    for mark in promises:
        if mark["t"] == "file":
            exact[mark["path"]] = mark
    for path, mark in exact.items():
        if not os.path.exists(path):
            failures.append(f"{path} is missing; it was promised ({mark['length']} bytes)")
            continue
        data = open(path, "rb").read()
        if len(data) != mark["length"] or sha256(data) != mark["sha"]:
            failures.append(f"{path} holds {len(data)} bytes, not the {mark['length']} promised, or other bytes")
    for mark in promises:
        if mark["t"] == "absent" and os.path.exists(mark["path"]):
            failures.append(f"{mark['path']} exists after its capture was cancelled")
    committed = {}
    for mark in promises:
        if mark["t"] == "committed":
            committed[mark["dest"]] = max(committed.get(mark["dest"], 0), mark["length"])
    for dest, (seed, length) in streams.items():
        expected = stream(seed, length)
        good = 0
        # The same input under another destination: a held recording moved elsewhere.
        paths = {p for other, (other_seed, _) in streams.items() if other_seed == seed for p in candidates(other, pool)}
        for path in sorted(paths):
            data = open(path, "rb").read()
            if data == expected[:len(data)]:
                good = max(good, len(data))
            elif path in exact:
                continue  # a file that was there before (the held recording's occupied destination)
            elif not path.startswith(os.path.join(pool, "recordings")):  # held: checked below
                first = next((i for i, (a, b) in enumerate(zip(data, expected)) if a != b), min(len(data), len(expected)))
                failures.append(f"{path}: {len(data)} bytes, not a prefix of its input "
                                f"({length} bytes; first difference at byte {first})")
        if good < committed.get(dest, 0):
            failures.append(f"{dest}: {committed[dest]} bytes were committed, only {good} survive")
    inputs = [stream(seed, length) for seed, length in set(streams.values())]
    for path in glob.glob(os.path.join(pool, "recordings", "*")):
        if not path.endswith(".json"):
            data = open(path, "rb").read()
            if not any(data == expected[:len(data)] for expected in inputs):
                failures.append(f"{path}: a held recording of {len(data)} bytes that is no prefix of any input")
    return failures


def check(binary, pool, promises, upcoming, streams, garbled=False):
    failures = check_pool(binary, pool, promises, upcoming, garbled)
    return failures + check_files(pool, promises, streams)

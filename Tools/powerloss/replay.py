"""Builds each crash state a recorded log allows and runs the checker on it.

A cut is made just before a flush in the log (every flush after `begin`), or at its end. At a
cut, each image holds every write logged before its own last flush, plus some of the writes
logged after that flush (`pending`): a power cut keeps any subset of writes the device had not
been told to flush. Per cut we replay `none` and `all` of them, and for the operation's last
`last_cuts` flushes with more than one pending write (every one when `last_cuts` is None)
`random` subsets and prefixes as well, from `random.Random(f"{seed}:{cut}:{variant}")`; with
`torn`, as many more random subsets in which one kept write is torn: only a random part of its
512-byte sectors reached the disk (a device writes a request's sectors in any order); with
`garble`, one state for each 512-byte sector of each pending write onto a capture's `commit`
file (where the recording's `blocks` markers say it lies) in which that sector is garbage and
every other pending write is kept: a 512e disk writes a 4 KiB physical sector by
read-modify-write, and a cut inside it can leave a logical sector that is neither the old
bytes nor the new, so two commit records in one sector would both be lost. (Any overwrite
risks the same: the kernel's rewrite of a take's last block when it is cut to its length
can garble committed bytes too, which no order of writes can prevent; only the commit
records' layout is the engine's to choose, so only they are garbled.)
Every marker logged before the cut is a promise the state must keep: it was made before the
flush that the cut interrupts, so the power may go right after it with only `pending` at risk.
"""
import json
import os
import random
import shutil
import subprocess
from dataclasses import dataclass, field

import checker
import powerlog
import rig


@dataclass
class State:
    cut: int                      # index of the flush record the power cut interrupts
    label: str                    # none, all, random-N, prefix-N
    excluded: frozenset = field(default_factory=frozenset)  # pending writes lost
    torn: tuple = ()  # (write, frozenset of its 512-byte sectors that reached the disk), if any
    garbled: tuple = ()  # (write, the 512-byte sector of it that holds garbage), if any

    def describe(self):
        torn = f", write {self.torn[0]} torn to sectors {sorted(self.torn[1])}" if self.torn else ""
        garbled = f", write {self.garbled[0]} garbled in sector {self.garbled[1]}" if self.garbled else ""
        return f"cut {self.cut} {self.label} (lost writes {sorted(self.excluded)}{torn}{garbled})"


class Log:
    def __init__(self, workdir):
        self.workdir = workdir
        self.records = powerlog.read(os.path.join(workdir, "log"))
        self.blob = open(os.path.join(workdir, "log"), "rb").read()
        self.markers = [(i, json.loads(r.text)) for i, r in enumerate(self.records) if r.kind == "M"]
        self.begin = next(i for i, m in self.markers if m["t"] == "begin")
        self.streams = {m["dest"]: (m["seed"], m["length"]) for _, m in self.markers if m["t"] == "stream"}
        self.manifest = json.load(open(os.path.join(workdir, "manifest.json")))
        self.blocks = [m for _, m in self.markers if m["t"] == "blocks"]

    def on_blocks(self, write, kind):
        """Whether write `write` lands on a file of `kind` (a `blocks` marker's ranges)."""
        record = self.records[write]
        return any(mark["file"] == kind and mark["device"] == record.device
                   and start < record.offset + record.length and record.offset < end
                   for mark in self.blocks for start, end in mark["ranges"])

    def cuts(self):
        return [i for i, r in enumerate(self.records) if r.kind == "F" and i > self.begin] + [len(self.records)]

    def last_flushes(self, cut):
        """Each device's last flush before `cut` (-1: none)."""
        last = {device: -1 for device in range(self.manifest["devices"])}
        for i in range(cut):
            if self.records[i].kind == "F":
                last[self.records[i].device] = i
        return last

    def pending(self, cut):
        """Writes before `cut` that come after their device's last flush before it."""
        last = self.last_flushes(cut)
        return [i for i in range(cut) if self.records[i].kind == "W" and i > last[self.records[i].device]]


SECTOR = 512


def states(log, seed, last_cuts, randoms, torn=False, garble=False):
    """Every state to replay, in cut order, without duplicates (same writes applied)."""
    cuts = log.cuts()
    # The operation's own last flushes (up to its last promise, not the unmount's), where more
    # than one write is pending: one pending write has no subsets besides none and all.
    last_promise = [i for i, m in log.markers if m["t"] != "blocks"][-1]
    eligible = [c for c in cuts if len(log.pending(c)) > 1 and c <= next(x for x in cuts if x > last_promise)]
    random_cuts = set(eligible if last_cuts is None else eligible[-last_cuts:] if last_cuts else [])
    seen = set()
    for cut in cuts:
        pending = log.pending(cut)
        candidates = [State(cut, "none", frozenset(pending)), State(cut, "all")]
        if cut in random_cuts:
            for variant in range(randoms):
                rng = random.Random(f"{seed}:{cut}:{variant}")
                if variant % 2 == 0:
                    kept = {i for i in pending if rng.random() < 0.5}
                    candidates.append(State(cut, f"random-{variant}", frozenset(set(pending) - kept)))
                else:
                    n = rng.randrange(len(pending))
                    candidates.append(State(cut, f"prefix-{variant}", frozenset(pending[n:])))
            multi_sector = [i for i in pending if log.records[i].length > SECTOR]
            for variant in range(randoms if torn and multi_sector else 0):
                rng = random.Random(f"{seed}:{cut}:torn-{variant}")
                victim = rng.choice(multi_sector)
                sectors = (log.records[victim].length + SECTOR - 1) // SECTOR
                reached = frozenset(s for s in range(sectors) if rng.random() < 0.5)
                if len(reached) in (0, sectors):
                    reached = frozenset({rng.randrange(sectors)})
                kept = {i for i in pending if rng.random() < 0.5} | {victim}
                candidates.append(State(cut, f"torn-{variant}", frozenset(set(pending) - kept), (victim, reached)))
        for victim in pending if garble else []:
            if log.on_blocks(victim, "commit"):
                for sector in range((log.records[victim].length + SECTOR - 1) // SECTOR):
                    candidates.append(State(cut, f"garbled-{victim}-{sector}", garbled=(victim, sector)))
        for state in candidates:
            applied_end = max((i for i in range(cut) if log.records[i].kind == "W" and i not in state.excluded), default=-1)
            key = (applied_end, frozenset(i for i in state.excluded if i < applied_end), state.torn, state.garbled)
            if key not in seen:
                seen.add(key)
                yield state


class Images:
    """One base image per device, advanced write by write as the cuts move on (in tmpfs)."""

    def __init__(self, log, scratch):
        self.log, self.scratch = log, scratch
        self.positions = [0] * log.manifest["devices"]
        self.bases = []
        for device in range(log.manifest["devices"]):
            path = os.path.join(scratch, f"base{device}")
            with open(path, "wb") as file:
                file.truncate(log.manifest["image_bytes"])
            self.bases.append(path)
        self.fds = [os.open(p, os.O_RDWR) for p in self.bases]

    def apply(self, fd, record, sectors=None):
        """Writes `record`, or only its `sectors` (512-byte indices) of it when torn."""
        if sectors is None:
            os.pwrite(fd, self.log.blob[record.at:record.at + record.length], record.offset)
            return
        for sector in sectors:
            start = sector * SECTOR
            end = min(start + SECTOR, record.length)
            os.pwrite(fd, self.log.blob[record.at + start:record.at + end], record.offset + start)

    def garble(self, fd, record, sector, state):
        """Overwrites `sector` (a 512-byte index) of `record` with bytes drawn for `state`."""
        start = sector * SECTOR
        length = min(SECTOR, record.length - start)
        rng = random.Random(f"{state.cut}:{state.label}")
        os.pwrite(fd, rng.randbytes(length), record.offset + start)

    def build(self, state):
        """Image paths holding `state`: each base advanced to its device's last flush before the
        cut (flushes only move forward as the cuts do), copied, plus the pending writes kept."""
        for device, flush in self.log.last_flushes(state.cut).items():
            for i in range(self.positions[device], flush):
                record = self.log.records[i]
                if record.kind == "W" and record.device == device:
                    self.apply(self.fds[device], record)
            self.positions[device] = max(self.positions[device], flush)
        kept = sorted(set(self.log.pending(state.cut)) - state.excluded)
        paths = []
        for device, base in enumerate(self.bases):
            path = os.path.join(self.scratch, f"state{device}")
            subprocess.run(["cp", "--sparse=always", base, path], check=True)
            fd = os.open(path, os.O_RDWR)
            for i in kept:
                if self.log.records[i].device == device:
                    torn = state.torn[1] if state.torn and state.torn[0] == i else None
                    self.apply(fd, self.log.records[i], torn)
                    if state.garbled and state.garbled[0] == i:
                        self.garble(fd, self.log.records[i], state.garbled[1], state)
            os.close(fd)
            paths.append(path)
        return paths


def mount_state(fstype, images, mounts, cleanup):
    """Mounts each image where the recording had it, after its journal or log recovery (the
    mount's own); fsck.ext4 -y or xfs_repair when the mount refuses. Returns notes."""
    notes = []
    for image, mountpoint in zip(images, mounts):
        device = rig.attach(image, cleanup)
        try:
            rig.mount(device, mountpoint, cleanup)
        except RuntimeError as error:
            repair = "xfs_repair" if fstype == "xfs" else "fsck.ext4 -y"
            rig.sh(f"{repair} {device}", check=False)
            rig.mount(device, mountpoint, cleanup)
            notes.append(f"{mountpoint} needed {repair}: {error}")
    return notes


def scratch_directory(workdir):
    """Where the states of `workdir`'s log are built: tmpfs, so copying an image is cheap."""
    return os.path.join("/dev/shm", "provideo-powerloss-" + os.path.basename(workdir.rstrip("/")))


def replay(workdir, provideo, seed, last_cuts, randoms, only=None, on_state=None, torn=False, garble=False):
    """Replays every state; returns (states replayed, [failure dicts], mounts that needed a repair)."""
    log = Log(workdir)
    scratch = scratch_directory(workdir)
    os.makedirs(scratch, exist_ok=True)
    count, failures, repairs = 0, [], 0
    try:
        images = Images(log, scratch)
        for state in states(log, seed, last_cuts, randoms, torn, garble):
            if only and state.label != only[1] or only and state.cut != only[0]:
                continue
            count += 1
            paths = images.build(state)
            promises = [m for i, m in log.markers if i < state.cut]
            upcoming = [m for i, m in log.markers if i >= state.cut]
            with rig.Cleanup() as cleanup:
                try:
                    repairs += len(mount_state(log.manifest["fstype"], paths, log.manifest["mounts"], cleanup))
                    problems = checker.check(provideo, log.manifest["pool"], promises, upcoming, log.streams,
                                             garbled=bool(state.garbled))
                except Exception as error:
                    problems = [f"replay error: {error}"]
            if problems:
                failures.append(dict(state=state.describe(), cut=state.cut, label=state.label, seed=seed,
                                     problems=problems, promises=promises))
            if on_state:
                on_state(state, problems)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return count, failures, repairs

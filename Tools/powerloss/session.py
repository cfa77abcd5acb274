"""A recording session: filesystems on loop devices over logfs images, and the workload's marks.

The workload marks what the engine has promised by writing JSON markers into the log (through
logfs's `control` file) right after the promise was made: after `provideo` returned, or after
the recorder's commit file proves a commit completed. A marker lands in the log after every
write and flush the promise depended on, so the replay knows, for each crash state, which
promises were made before the cut.
"""
import json
import os
import signal
import subprocess
import threading
import time

import rig
from stream import commit_records, sha256, stream

IMAGE_MIB = {"ext4": 64, "xfs": 128}


class Session:
    def __init__(self, workdir, fstype, devices, provideo, fault=None):
        self.workdir, self.fstype, self.devices, self.provideo_path = workdir, fstype, devices, provideo
        self.fault = fault
        self.log = os.path.join(workdir, "log")
        self.fuse = os.path.join(workdir, "fuse")
        self.mounts = [os.path.join(workdir, f"mnt{i}") for i in range(devices)]
        self.pool = os.path.join(self.mounts[0], "pool")
        self.cleanup = rig.Cleanup()

    def __enter__(self):
        try:
            images = {}
            for index in range(self.devices):
                backing = os.path.join(self.workdir, f"backing{index}")
                with open(backing, "wb") as file:
                    file.truncate(IMAGE_MIB[self.fstype] << 20)
                images[f"img{index}"] = backing
            rig.start_logfs(self.fuse, self.log, images, self.cleanup)
            for index, mountpoint in enumerate(self.mounts):
                device = rig.attach(os.path.join(self.fuse, f"img{index}"), self.cleanup)
                rig.mkfs(self.fstype, device)
                rig.mount(device, mountpoint, self.cleanup)
                os.makedirs(os.path.join(mountpoint, "dest"))
            rig.sh("sync")
            return self
        except BaseException:
            self.cleanup.close()
            raise

    def __exit__(self, *exc):
        self.cleanup.close()

    def manifest(self):
        return dict(fstype=self.fstype, devices=self.devices, mounts=self.mounts, pool=self.pool,
                    image_bytes=IMAGE_MIB[self.fstype] << 20, fault=self.fault)

    # Markers

    def mark(self, kind, **fields):
        with open(os.path.join(self.fuse, "control"), "w") as control:
            control.write(json.dumps(dict(t=kind, **fields)))

    def mark_file(self, path):
        data = open(path, "rb").read()
        self.mark("file", path=path, length=len(data), sha=sha256(data))

    def mark_blocks(self, kind, path):
        """Marks where `path` lies on its device (FIEMAP through filefrag: byte ranges), so
        that the replay can tear the writes that land there (`--garble`)."""
        device = next(i for i, m in enumerate(self.mounts) if os.path.realpath(path).startswith(m + "/"))
        output = subprocess.run(["filefrag", "-b512", "-e", path], capture_output=True, text=True, check=True).stdout
        ranges = []
        for line in output.splitlines():
            fields = line.replace("..", " ").replace(":", " ").split()
            if len(fields) >= 5 and fields[0].isdigit():
                start, end = int(fields[3]), int(fields[4])
                ranges.append([start * 512, (end + 1) * 512])
        self.mark("blocks", file=kind, device=device, ranges=ranges)

    def mark_pool(self):
        status = self.status()
        self.mark("pool", initial=status["initialCapacity"], remaining=status["remainingCapacity"])

    # Commands

    def run(self, *arguments, expect=0, stdin=None):
        env = dict(os.environ)
        env.pop("PROVIDEO_FAULT", None)
        if self.fault:
            env["PROVIDEO_FAULT"] = self.fault
        result = subprocess.run([self.provideo_path, "--pool", self.pool, *arguments], input=stdin,
                                capture_output=True, env=env)
        if expect is not None and result.returncode != expect:
            raise RuntimeError(f"provideo {' '.join(arguments)} exited {result.returncode}: {result.stderr.decode()}")
        return result

    def status(self):
        return json.loads(self.run("status", "--json").stdout)

    def commit_file(self, dest):
        """The `commit` file of the capture recording to `dest` (its journal names it), or None
        before the capture exists."""
        captures = os.path.join(self.pool, "captures")
        for name in os.listdir(captures) if os.path.isdir(captures) else []:
            try:
                journal = json.load(open(os.path.join(captures, name, "capture.json")))
            except (OSError, ValueError):
                continue
            if journal.get("destination") == os.path.realpath(dest):
                return os.path.join(captures, name, "commit")
        return None

    def record(self, dest, seed, length, kill_after=None, expect=0, chunk=65536, pace=0.04):
        """`provideo record DEST --durability 0.2` fed `length` bytes of stream `seed` at
        `chunk` per `pace` seconds, marking each commit once it provably completed: the
        pipeline writes one record at a time, so a larger record in the capture's `commit` means
        every smaller one had landed. With `kill_after`, the recorder is killed (SIGKILL) then.
        """
        data = stream(seed, length)
        self.mark("stream", dest=dest, seed=seed, length=length)
        env = dict(os.environ)
        if self.fault:
            env["PROVIDEO_FAULT"] = self.fault
        recorder = subprocess.Popen([self.provideo_path, "--pool", self.pool, "record", dest, "--bitrate", "20M",
                                     "--durability", "0.2"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, env=env)

        def feed():
            try:
                for start in range(0, length, chunk):
                    recorder.stdin.write(data[start:start + chunk])
                    recorder.stdin.flush()
                    time.sleep(pace)
                recorder.stdin.close()
            except (BrokenPipeError, ValueError):
                pass
        feeder = threading.Thread(target=feed)
        feeder.start()
        started, seen, promised = time.time(), 0, 0
        commit = None
        while recorder.poll() is None:
            if commit is None:
                commit = self.commit_file(dest)
                if commit:
                    self.mark_blocks("commit", commit)
            try:
                value = commit_records(open(commit, "rb").read()) if commit else 0
            except OSError:
                value = 0
            if value > seen:
                if seen > promised:
                    self.mark("committed", dest=dest, length=seen)
                    promised = seen
                seen = value
            if kill_after is not None and time.time() - started > kill_after:
                recorder.send_signal(signal.SIGKILL)
                recorder.wait()
                break
            time.sleep(0.01)
        feeder.join()
        err = recorder.stderr.read()
        recorder.wait()
        if kill_after is None and expect is not None and recorder.returncode != expect:
            raise RuntimeError(f"provideo record exited {recorder.returncode}: {err.decode()}")
        return data, recorder.returncode, err.decode()

"""Shell steps the harness shares: loop devices, mounts, mkfs, the logging FUSE server.

Every helper that sets something up returns or registers how to undo it, and `Cleanup` runs
those steps in reverse even when the run fails, so no mount or loop device is left behind.
"""
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"  # Debian's, which has python3-fusepy (not a pyenv shim)


def sh(command, check=True, env=None):
    result = subprocess.run(command, shell=True, capture_output=True, text=True, env=env)
    if check and result.returncode != 0:
        raise RuntimeError(f"`{command}` failed ({result.returncode}): {result.stderr.strip()}")
    return result


class Cleanup:
    """Undo steps, run last-in first-out by `close` (also on exceptions, as a context manager)."""

    def __init__(self):
        self.steps = []

    def push(self, step):
        self.steps.append(step)

    def close(self):
        while self.steps:
            step = self.steps.pop()
            try:
                step()
            except Exception as error:  # cleanup goes on: report, do not mask the real failure
                print(f"cleanup: {error}", file=sys.stderr)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def attach(image, cleanup):
    """A loop device over `image`, buffered (--direct-io=off), detached by `cleanup`."""
    device = sh(f"losetup --find --show --direct-io=off {image}").stdout.strip()
    cleanup.push(lambda: sh(f"losetup -d {device}", check=False))
    return device


def mkfs(fstype, device):
    if fstype == "xfs":
        # xfsprogs ≥ 5.19 refuses filesystems under 300 MB except under fstests, whose
        # variables lift the limit; our images are 128 MiB to keep logs and replays small.
        env = dict(os.environ, TEST_DIR="1", TEST_DEV="1", QA_CHECK_FS="1")
        sh(f"mkfs.xfs -q -f -m reflink=1 {device}", env=env)
    else:
        sh(f"mkfs.ext4 -q -F {device}")


def mount(device, mountpoint, cleanup):
    os.makedirs(mountpoint, exist_ok=True)
    sh(f"mount {device} {mountpoint}")
    cleanup.push(lambda: unmount(mountpoint))


def unmount(mountpoint):
    if sh(f"umount {mountpoint}", check=False).returncode != 0:
        sh(f"umount -l {mountpoint}", check=False)


def start_logfs(mountpoint, log, images, cleanup):
    """Serves `images` ({name: backing file}) at `mountpoint`, logging to `log`."""
    os.makedirs(mountpoint, exist_ok=True)
    arguments = [f"{name}={path}" for name, path in images.items()]
    server = subprocess.Popen([PYTHON, os.path.join(HERE, "logfs.py"), mountpoint, log] + arguments,
                              stderr=subprocess.PIPE, text=True)

    def stop():
        unmount(mountpoint)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    cleanup.push(stop)
    deadline = time.time() + 10
    while not os.path.exists(os.path.join(mountpoint, "control")):
        if server.poll() is not None or time.time() > deadline:
            raise RuntimeError(f"logfs did not start: {server.stderr.read() if server.poll() is not None else 'timeout'}")
        time.sleep(0.05)
    return server


def clear_stale(root):
    """Unmounts and detaches whatever an earlier killed run left under `root`: its filesystems
    first, then their loop devices (whose backing files still show under `root` while the FUSE
    mount is there), then the FUSE mount, which ends its logfs server."""
    mounts = [line.split()[1:3] for line in open("/proc/mounts") if line.split()[1].startswith(root)]
    for mountpoint, fstype in sorted(mounts, key=lambda m: len(m[0]), reverse=True):
        if not fstype.startswith("fuse"):
            unmount(mountpoint)
    for line in sh("losetup -a", check=False).stdout.splitlines():
        if root in line:
            sh(f"losetup -d {line.split(':')[0]}", check=False)
    for mountpoint, fstype in mounts:
        if fstype.startswith("fuse"):
            unmount(mountpoint)

#!/usr/bin/python3
"""A FUSE filesystem that serves disk images and logs every write and flush to them.

    logfs.py MOUNTPOINT LOG NAME=BACKING [NAME=BACKING ...]

Each NAME appears in MOUNTPOINT as a fixed-size file whose bytes live in BACKING (an existing
file). A loop device over MOUNTPOINT/NAME then sends every block write of the filesystem above
it here: the write is applied to BACKING and appended to LOG, and every fsync (which is what
the loop driver turns a REQ_PREFLUSH/FUA flush into) is appended as a flush record. Writes to
MOUNTPOINT/control append a marker record (the workload's promises: "finish() returned").

Why Python (Debian's python3-fusepy) and not C: nothing to compile, and the workloads are a few
MiB, where the kernel round trips, not the interpreter, set the pace. Why one thread and the
`direct_io` mount option: the log must hold requests in the order the kernel sent them, and
without direct_io the writes would sit in this file's page cache and reach us out of order (or
not at all before the flush).

The log format (little-endian) is in powerlog.py, the reader the replay tool uses.
"""
import errno
import os
import stat
import sys
import time

from fusepy import FUSE, FuseOSError, Operations

import powerlog


class LogFS(Operations):
    def __init__(self, log_path, images):
        self.log = open(log_path, "ab", buffering=1 << 20)
        self.images = {}  # "/name" -> (device index, fd, size)
        for index, (name, backing) in enumerate(images):
            fd = os.open(backing, os.O_RDWR)
            self.images["/" + name] = (index, fd, os.fstat(fd).st_size)
        self.now = time.time()

    def getattr(self, path, fh=None):
        common = dict(st_uid=0, st_gid=0, st_atime=self.now, st_mtime=self.now, st_ctime=self.now)
        if path == "/":
            return dict(st_mode=stat.S_IFDIR | 0o755, st_nlink=2, **common)
        if path == "/control":
            return dict(st_mode=stat.S_IFREG | 0o600, st_nlink=1, st_size=0, **common)
        if path in self.images:
            return dict(st_mode=stat.S_IFREG | 0o600, st_nlink=1, st_size=self.images[path][2], **common)
        raise FuseOSError(errno.ENOENT)

    def readdir(self, path, fh):
        return [".", "..", "control"] + [name[1:] for name in self.images]

    def open(self, path, flags):
        if path != "/control" and path not in self.images:
            raise FuseOSError(errno.ENOENT)
        return 0

    def truncate(self, path, length, fh=None):
        # `echo text > control` truncates first; images keep their size.
        if path != "/control" and length != self.images[path][2]:
            raise FuseOSError(errno.EPERM)

    def read(self, path, size, offset, fh):
        if path not in self.images:
            return b""
        return os.pread(self.images[path][1], size, offset)

    def write(self, path, data, offset, fh):
        if path == "/control":
            powerlog.write_marker(self.log, data.decode().strip())
            self.log.flush()
            return len(data)
        device, fd, size = self.images[path]
        if offset + len(data) > size:
            raise FuseOSError(errno.ENOSPC)
        os.pwrite(fd, data, offset)
        powerlog.write_write(self.log, device, offset, data)
        return len(data)

    def fsync(self, path, datasync, fh):
        if path in self.images:
            powerlog.write_flush(self.log, self.images[path][0])
            self.log.flush()
        return 0

    def flush(self, path, fh):
        # close(2), not a device flush: nothing to log.
        return 0


def main():
    mountpoint, log_path = sys.argv[1], sys.argv[2]
    images = [arg.split("=", 1) for arg in sys.argv[3:]]
    FUSE(LogFS(log_path, images), mountpoint, foreground=True, nothreads=True,
         direct_io=True, big_writes=True, max_write=131072, allow_other=True)


if __name__ == "__main__":
    main()

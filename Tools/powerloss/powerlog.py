"""The write/flush log logfs.py records and replay.py reads.

Records, in the order logfs.py received them (little-endian):
    b"W" device:u8 offset:u64 length:u32 data   a write to image `device`
    b"F" device:u8                              an fsync of image `device` (a device flush)
    b"M" length:u32 text                        a marker from the workload (utf-8)
"""
import struct
from dataclasses import dataclass

_WRITE = struct.Struct("<cBQI")
_FLUSH = struct.Struct("<cB")
_MARK = struct.Struct("<cI")


def write_write(log, device, offset, data):
    log.write(_WRITE.pack(b"W", device, offset, len(data)))
    log.write(data)


def write_flush(log, device):
    log.write(_FLUSH.pack(b"F", device))


def write_marker(log, text):
    data = text.encode()
    log.write(_MARK.pack(b"M", len(data)))
    log.write(data)


@dataclass
class Record:
    kind: str          # "W", "F" or "M"
    device: int = 0
    offset: int = 0    # W: byte offset in the image
    length: int = 0    # W: bytes written
    at: int = 0        # W: where the data starts in the log file
    text: str = ""     # M: the marker


def read(path):
    """Every record of the log at `path`, in order (write data stays in the file: see `at`)."""
    records = []
    with open(path, "rb") as log:
        blob = log.read()
    position = 0
    while position < len(blob):
        kind = blob[position:position + 1]
        if kind == b"W":
            _, device, offset, length = _WRITE.unpack_from(blob, position)
            position += _WRITE.size
            records.append(Record("W", device, offset, length, position))
            position += length
        elif kind == b"F":
            _, device = _FLUSH.unpack_from(blob, position)
            position += _FLUSH.size
            records.append(Record("F", device))
        elif kind == b"M":
            _, length = _MARK.unpack_from(blob, position)
            position += _MARK.size
            records.append(Record("M", text=blob[position:position + length].decode()))
            position += length
        else:
            raise ValueError(f"{path}: bad record {kind!r} at byte {position}")
    return records

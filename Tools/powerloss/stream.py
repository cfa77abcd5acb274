"""The bytes a recording is fed: deterministic from a seed, so the checker can rebuild them."""
import hashlib
import random
import struct


def stream(seed, length):
    """`length` bytes from `seed`, no two 512-byte sectors alike (each starts with the seed and
    its index, then repeats 16 bytes drawn for it), so a zeroed, stale or shifted sector cannot
    pass as the right one; and compressible, so a kept log stays small."""
    rng = random.Random(seed)
    sectors = []
    for index in range((length + 511) // 512):
        sectors.append(struct.pack("<QQ", seed, index) + rng.randbytes(16) * 31)
    return b"".join(sectors)[:length]


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def commit_records(blob):
    """The committed length in a capture's `commit` file (Tests/TestSupport/CommittedLength.swift, CaptureJournal.readCommitted): the
    larger of the two 16-byte records at 0 and 512 whose check word matches, else 0."""
    check = 0x5052_4F56_4944_454F
    best = 0
    for start in (0, 512):
        if start + 16 <= len(blob):
            length = int.from_bytes(blob[start:start + 8], "little")
            if int.from_bytes(blob[start + 8:start + 16], "little") == length ^ check:
                best = max(best, length)
    return best

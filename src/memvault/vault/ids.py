"""Note ids: UUIDv7 (time-ordered, so B-tree inserts stay local)."""

from __future__ import annotations

import os
import time
import uuid


def uuid7() -> str:
    """A random UUIDv7 (RFC 9562): 48-bit ms timestamp, version 7, variant 10, 74 random bits."""
    ms = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= ((rand >> 62) & 0xFFF) << 64
    value |= 0b10 << 62
    value |= rand & ((1 << 62) - 1)
    return str(uuid.UUID(int=value))


def canonical_uuid(value: str) -> str | None:
    """The canonical lowercase form of a UUID string, or None when it is not one."""
    try:
        return str(uuid.UUID(value))
    except (ValueError, AttributeError, TypeError):
        return None

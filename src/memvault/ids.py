"""Note ids: UUIDv7 (time-ordered, so B-tree inserts stay local)."""

from __future__ import annotations

import os
import re
import threading
import time
import uuid

_lock = threading.Lock()
_last = 0
_RAND_MASK = (1 << 62) - 1


def uuid7() -> str:
    """A UUIDv7 (RFC 9562): 48-bit ms timestamp, version 7, variant 10, 74 random bits.

    Monotonic within the process (RFC 9562 section 6.2, method 2): an id made in the same
    millisecond as the previous one (or after the clock stepped back) is the previous one plus
    a random step, so ids sort in the order they were made. Sessions rely on it: two turns
    with the same event time follow each other in write order.
    """
    global _last
    ms = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= ((rand >> 62) & 0xFFF) << 64
    value |= 0b10 << 62
    value |= rand & _RAND_MASK
    with _lock:
        if value <= _last:
            step = 1 + (rand & 0xFFFF)
            low = (_last & _RAND_MASK) + step
            high = _last >> 62  # timestamp, version, rand_a and variant of the previous id
            if low > _RAND_MASK:  # the 62-bit tail overflowed: carry into rand_a
                low &= _RAND_MASK
                rand_a = ((high >> 2) & 0xFFF) + 1
                if rand_a > 0xFFF:  # 4,096 x 2^62 ids in one ms: borrow the next ms
                    return _next_ms(_last)
                high = (high & ~(0xFFF << 2)) | (rand_a << 2)
            value = (high << 62) | low
        _last = value
    return str(uuid.UUID(int=value))


def _next_ms(last: int) -> str:
    global _last
    ms = (last >> 80) + 1
    value = (ms << 80) | (0x7 << 76) | (0b10 << 62)
    _last = value
    return str(uuid.UUID(int=value))


def canonical_uuid(value: str) -> str | None:
    """The canonical lowercase form of a UUID string, or None when it is not one."""
    try:
        return str(uuid.UUID(value))
    except (ValueError, AttributeError, TypeError):
        return None


NOTE_ID_PATTERN = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
"""Note ids (UUIDv7, canonical 8-4-4-4-12 hex form), as a JSON Schema pattern."""

_NOTE_ID_RE = re.compile(NOTE_ID_PATTERN[1:-1])


def is_note_id(value: object) -> bool:
    """Whether `value` has the note-id format: the one validator of the API's request models,
    the MCP backends and the SDK (which refuses `.`, `..` or a path before it is sent)."""
    return isinstance(value, str) and _NOTE_ID_RE.fullmatch(value) is not None

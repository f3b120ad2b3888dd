"""Validation of every client-supplied field, before anything is screened, sealed or stored.

The API validates the same rules at its boundary; the vault checks them again because it is a
public service API too. Messages name the field and the rule, never the value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from datetime import datetime

from memvault.errors import InvalidRequest
from memvault.scope import SHARED_AGENT, WILDCARD_READER, validate_new_id
from memvault.vault.notes import NoteType

MAX_TEXT_CHARS = 32_000
MAX_QUERY_CHARS = 4_000
MAX_TOPICS = 5
MAX_TOPIC_CHARS = 64
MAX_SOURCE_CHARS = 256
MAX_READERS = 64
MAX_TTL_DAYS = 36_500
MAX_SEARCH_LIMIT = 100
MAX_LIST_LIMIT = 1000
MAX_OFFSET = 1_000_000
MIN_OCCURRED_AT = -2_208_988_800.0  # 1900-01-01T00:00:00Z
MAX_OCCURRED_AT = 253_402_300_799.0  # 9999-12-31T23:59:59Z
"""The bounds of every client-supplied field; the API's request models declare the same ones."""


def text_problem(value: str) -> str | None:
    """Why `value` is not well-formed text (`"nul"` or `"surrogate"`), or None when it is."""
    if "\x00" in value:
        return "nul"
    try:
        value.encode("utf-8", "strict")
    except UnicodeEncodeError:
        return "surrogate"
    return None


def check_string(value: object, field: str, *, max_chars: int) -> str:
    """A well-formed string: valid Unicode (no lone surrogate), no NUL, within `max_chars`."""
    if not isinstance(value, str):
        raise InvalidRequest(f"{field} must be a string")
    if len(value) > max_chars:
        raise InvalidRequest(f"{field} is longer than {max_chars} characters")
    problem = text_problem(value)
    if problem == "surrogate":
        raise InvalidRequest(f"{field} is not valid Unicode (lone surrogate)")
    if problem == "nul":
        raise InvalidRequest(f"{field} must not contain NUL characters")
    return value


def check_text(value: object, field: str = "text", max_chars: int = MAX_TEXT_CHARS) -> str:
    """A non-empty, well-formed text."""
    text = check_string(value, field, max_chars=max_chars)
    if not text.strip():
        raise InvalidRequest(f"{field} must be a non-empty string")
    return text


def check_note_type(note_type: str) -> NoteType:
    if note_type not in ("memory", "knowledge"):
        raise InvalidRequest("note_type must be 'memory' or 'knowledge'")
    return "knowledge" if note_type == "knowledge" else "memory"


def check_topics(topics: Sequence[str] | None, note_type: str) -> tuple[str, ...]:
    """Stripped, non-empty topics (1-5 for knowledge notes), each well formed."""
    if topics is not None and (isinstance(topics, str) or not isinstance(topics, Sequence)):
        raise InvalidRequest("topics must be a list of strings")
    if topics is not None and len(topics) > MAX_TOPICS:
        raise InvalidRequest(f"topics holds at most {MAX_TOPICS} entries")
    clean = tuple(
        t.strip()
        for t in (check_string(t, "topics", max_chars=MAX_TOPIC_CHARS) for t in topics or ())
        if t.strip()
    )
    if note_type == "knowledge" and not clean:
        raise InvalidRequest("knowledge notes need 1-5 topics")
    return clean


def check_source(source: object) -> str | None:
    if source is None:
        return None
    return check_string(source, "source", max_chars=MAX_SOURCE_CHARS)


def check_readers(readers: Sequence[str] | None, owner: str) -> list[str]:
    """The reader list of a private note: the owner first, then other agent ids (id grammar)."""
    if readers is not None and (isinstance(readers, str) or not isinstance(readers, Sequence)):
        raise InvalidRequest("readers must be a list of agent ids")
    if readers is not None and len(readers) > MAX_READERS:
        raise InvalidRequest(f"readers holds at most {MAX_READERS} entries")
    extra = [validate_new_id(r, "readers") for r in readers or ()]
    if SHARED_AGENT in extra or WILDCARD_READER in extra:
        raise InvalidRequest("use visibility=shared to share a note")
    return [owner, *sorted(set(extra) - {owner})]


def check_ttl(ttl_days: float | None) -> float | None:
    if ttl_days is None:
        return None
    if isinstance(ttl_days, bool) or not isinstance(ttl_days, int | float):
        raise InvalidRequest("ttl_days must be a number")
    if not (0 < ttl_days <= MAX_TTL_DAYS):
        raise InvalidRequest(f"ttl_days must be between 0 and {MAX_TTL_DAYS}")
    return float(ttl_days)


_RFC3339 = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:[Zz]|[+-]\d{2}:\d{2})"
)


def check_session_id(session_id: object) -> str | None:
    """A session id in the id grammar (it names a conversation or episode), or None."""
    if session_id is None:
        return None
    if not isinstance(session_id, str):
        raise InvalidRequest("session_id must be a string")
    return validate_new_id(session_id, "session_id")


def check_occurred_at(value: object, field: str = "occurred_at") -> float | None:
    """An event time: an RFC 3339 string with an offset, or epoch seconds; None when absent.

    Returned as epoch seconds (UTC) within years 1900-9999.
    """
    if value is None:
        return None
    if isinstance(value, str):
        if len(value) > 40 or not _RFC3339.fullmatch(value):
            raise InvalidRequest(f"{field} must be an RFC 3339 time with an offset")
        digits = value.upper().replace("Z", "+00:00").replace(" ", "T")
        head, _, tail = digits.partition(".")
        if tail:  # Python's fromisoformat takes at most 6 fraction digits
            fraction, offset = tail[:-6], tail[-6:]
            digits = f"{head}.{fraction[:6].ljust(6, '0')}{offset}"
        try:
            epoch = datetime.fromisoformat(digits).timestamp()
        except ValueError:
            raise InvalidRequest(f"{field} must be an RFC 3339 time with an offset") from None
    elif isinstance(value, int | float) and not isinstance(value, bool):
        epoch = float(value)
    else:
        raise InvalidRequest(f"{field} must be an RFC 3339 time or epoch seconds")
    if not math.isfinite(epoch) or not MIN_OCCURRED_AT <= epoch <= MAX_OCCURRED_AT:
        raise InvalidRequest(f"{field} must be between years 1900 and 9999")
    return epoch

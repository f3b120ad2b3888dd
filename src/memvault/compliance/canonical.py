"""Canonical JSON (RFC 8785 for the types memvault signs) and RFC 3339 UTC timestamps.

Everything signed or hashed goes through `canonical_json`: UTF-8, keys sorted, no insignificant
whitespace, non-ASCII kept as UTF-8, integers only (a float is refused: its text form is not
canonical across languages). Times are strings from `rfc3339`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from memvault.errors import InvalidRequest


class NotCanonical(InvalidRequest):
    """A value has no canonical JSON form here (a float, a non-string key, an unknown type)."""

    code = "not_canonical"


def _check(value: Any, path: str) -> None:
    if value is None or isinstance(value, (bool, int, str)):
        return
    if isinstance(value, float):
        raise NotCanonical(
            f"{path}: floats are not allowed in canonical JSON (use an integer or an RFC 3339 "
            "string)"
        )
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise NotCanonical(f"{path}: object keys must be strings")
            _check(item, f"{path}.{key}")
        return
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _check(item, f"{path}[{index}]")
        return
    raise NotCanonical(f"{path}: {type(value).__name__} has no canonical JSON form")


def canonical_json(obj: Any) -> bytes:
    """The canonical UTF-8 bytes of `obj` (dicts, lists, str, int, bool, None; no floats).

    `json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`, encoded as
    UTF-8, after refusing every value that has no canonical form (`NotCanonical` names where).
    """
    _check(obj, "$")
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8")


def rfc3339(epoch_seconds: float) -> str:
    """`epoch_seconds` as an RFC 3339 UTC time with millisecond precision and `Z`.

    >>> rfc3339(0)
    '1970-01-01T00:00:00.000Z'
    """
    moment = datetime.fromtimestamp(epoch_seconds, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse_rfc3339(value: str) -> datetime:
    """Parse a time written by `rfc3339` (or any RFC 3339 time with `Z` or an offset)."""
    return datetime.fromisoformat(value.replace("Z", "+00:00"))

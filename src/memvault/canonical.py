"""Canonical JSON, RFC 3339 times and the audit chain's hash: the one copy of each.

Everything memvault signs or hashes (audit events, export heads, audit checkpoints, erasure
receipts) goes through `canonical_json`: UTF-8, keys sorted, no insignificant whitespace,
non-ASCII kept as UTF-8, integers only (a float is refused: its text form is not canonical
across languages). For these types that is RFC 8785. Times are strings from `rfc3339`.

This module sits beside `errors` and `scope` at the bottom of the package, so the vault (which
writes the audit chain), the keyring (which signs checkpoints) and compliance (which verifies
exports offline) all import it without an upward arrow.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from memvault.errors import InvalidRequest

GENESIS = "0" * 64
"""The `prev` of a tenant's first audit event, and the head hash of an empty log."""


class NotCanonical(InvalidRequest):
    """A value has no canonical JSON form here (a float, a non-string key, an unknown type)."""

    code = "not_canonical"


_SCALARS = frozenset({str, int, bool, type(None)})
"""Types with a canonical form, checked by identity first: most values are these, and an
`isinstance` against `Mapping` goes through the ABC machinery (the audit append's hot path)."""


def _check(value: Any, path: str) -> None:
    kind = type(value)
    if kind in _SCALARS:
        return
    if kind is dict or (kind is not list and isinstance(value, Mapping)):
        for key, item in value.items():
            if type(key) is not str:
                raise NotCanonical(f"{path}: object keys must be strings")
            if type(item) not in _SCALARS:
                _check(item, f"{path}.{key}")
        return
    if kind is list or kind is tuple:
        for index, item in enumerate(value):
            if type(item) not in _SCALARS:
                _check(item, f"{path}[{index}]")
        return
    if isinstance(value, float):
        raise NotCanonical(
            f"{path}: floats are not allowed in canonical JSON (use an integer or an RFC 3339 "
            "string)"
        )
    if isinstance(value, (bool, int, str)):  # subclasses (an IntEnum, a str subclass)
        return
    raise NotCanonical(f"{path}: {kind.__name__} has no canonical JSON form")


def canonical_json(obj: Any) -> bytes:
    """The canonical UTF-8 bytes of `obj` (dicts, lists, str, int, bool, None; no floats).

    `json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`, encoded as
    UTF-8, after refusing every value that has no canonical form (`NotCanonical` names where).
    """
    _check(obj, "$")
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8")


def event_hash(event: Mapping[str, Any]) -> str:
    """The audit chain's hash: SHA-256 (hex) of the canonical JSON of `event` without `hash`."""
    body = {k: v for k, v in event.items() if k != "hash"}
    return hashlib.sha256(canonical_json(body)).hexdigest()


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

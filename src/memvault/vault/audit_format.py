"""The audit event format: canonical JSON, the chain hash, time stamps and the detail rules.

Pure functions shared by the writer (`AuditLog`) and the readers of a chain (export, verify).
Details are counts, flags, names and ids: `check_detail` refuses anything that could be text.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from memvault.errors import InvalidRequest
from memvault.vault.store.models import AuditEventRow

GENESIS = "0" * 64
"""The `prev` of a tenant's first event."""
SAFE_STRING = re.compile(r"[A-Za-z0-9._:@/+=-]{0,128}")
"""A detail string is a name, a code or an id: no spaces, so prose cannot pass."""


def canonical(obj: Any) -> bytes:
    """Canonical JSON bytes (sorted keys, no whitespace, UTF-8); floats refused."""
    _no_floats(obj)
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def event_hash(event: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of the canonical JSON of `event` without its `hash` field."""
    body = {k: v for k, v in event.items() if k != "hash"}
    return hashlib.sha256(canonical(body)).hexdigest()


def utc(epoch_seconds: float) -> str:
    """RFC 3339 UTC with milliseconds and `Z` (as `compliance.canonical.rfc3339`)."""
    moment = datetime.fromtimestamp(epoch_seconds, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def safe_name(value: str) -> str:
    """`value` (a detector or code name) with anything but `[A-Za-z0-9._:@/+=-]` as `_`."""
    return re.sub(r"[^A-Za-z0-9._:@/+=-]", "_", value)[:128]


_SCALARS = frozenset({str, int, bool, type(None)})
"""Types that hold no float: checked by identity first, as most values of an event are these
(an `isinstance` against `Mapping` goes through the ABC machinery)."""


def _no_floats(value: Any) -> None:
    if type(value) in _SCALARS:
        return
    if isinstance(value, float):
        raise InvalidRequest("audit events hold integers, not floats")
    if isinstance(value, (dict, Mapping)):
        for item in value.values():
            _no_floats(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _no_floats(item)


def check_detail(name: str, value: Any) -> None:
    """Details are counts, flags, names and ids: refuse anything that could be text."""
    if value is None or isinstance(value, (bool, int)):
        return
    if isinstance(value, float):
        raise InvalidRequest(f"audit detail {name} is a float: audit events hold integers")
    if isinstance(value, str):
        if not SAFE_STRING.fullmatch(value):
            raise InvalidRequest(f"audit detail {name} must be a name, code or id, not text")
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            check_detail(f"{name}.{key}", str(key))
            check_detail(f"{name}.{key}", item)
        return
    if isinstance(value, (list, tuple)):
        for item in value:
            check_detail(name, item)
        return
    raise InvalidRequest(f"audit detail {name} must be a count, flag, name or id")


def row_to_event(row: AuditEventRow) -> dict[str, Any]:
    """The DESIGN-format event of a stored row."""
    return {
        "seq": row.seq,
        "tenant_id": row.tenant_id,
        "at": row.at,
        "actor": row.actor,
        "action": row.action,
        "subject": json.loads(row.subject),
        "details": json.loads(row.details),
        "prev": row.prev,
        "hash": row.hash,
    }

"""The audit event format: the detail rules and the stored row as an event.

Pure functions shared by the writer (`AuditLog`) and the readers of a chain (export, verify).
Details are counts, flags, names and ids: `check_detail` refuses anything that could be text.
Canonical JSON, the chain hash, `GENESIS` and the time format live in `memvault.canonical` (one
copy, shared with the keyring, which signs checkpoints, and the offline verifier).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from memvault.errors import InvalidRequest
from memvault.store.models import AuditEventRow

SAFE_STRING = re.compile(r"[A-Za-z0-9._:@/+=-]{0,128}")
"""A detail string is a name, a code or an id: no spaces, so prose cannot pass."""


def safe_name(value: str) -> str:
    """`value` (a detector or code name) with anything but `[A-Za-z0-9._:@/+=-]` as `_`."""
    return re.sub(r"[^A-Za-z0-9._:@/+=-]", "_", value)[:128]


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

"""The signed audit export as records: events, the checkpoints they cover, the signed head.

One export is a snapshot taken by `snapshot` and written by `records`:
- the events with `since_seq < seq <= head seq`, oldest first;
- after the event at each checkpoint's seq, that checkpoint (`{"type": "checkpoint", …}`, signed
  by the deployment key and kept in the keystore); a checkpoint beyond the head (events removed
  from the end of the log) comes right before the head, where verification refuses it;
- the head `{"type": "head", "tenant_id", "since_seq", "seq", "hash", "exported_at",
  "checkpoints", "key_id", "signature"}`: where the export starts, where it ends, and how many
  checkpoints it carries, all under the signature.

The checkpoints are read before the head, so every checkpoint of an intact log is at or below
the head the export names. Used by `GET /v1/admin/audit/export` and the console's audit page.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memvault.canonical import rfc3339
from memvault.errors import InvalidRequest

if TYPE_CHECKING:
    from memvault.runtime.factory import Services


@dataclass(frozen=True, slots=True)
class ExportSnapshot:
    """What one export covers: the tenant, where it starts, its head, its checkpoints."""

    tenant: str
    since_seq: int
    head_seq: int
    head_hash: str
    checkpoints: tuple[dict[str, Any], ...]


def snapshot(services: Services, tenant: str, since_seq: int = 0) -> ExportSnapshot:
    """Fix what an export of `tenant` after `since_seq` covers (checkpoints first, then the
    head). `InvalidRequest` when `since_seq` is beyond the last event."""
    carried = services.keyring.audit_checkpoints().listed(tenant, after_seq=since_seq)
    head_seq, head_hash = services.audit.head(tenant)
    if since_seq > head_seq:
        raise InvalidRequest("since_seq is beyond the last audit event")
    return ExportSnapshot(tenant, since_seq, head_seq, head_hash, tuple(carried))


def records(services: Services, snap: ExportSnapshot) -> Iterator[dict[str, Any]]:
    """The export's lines as objects: events with their checkpoints, then the signed head."""
    pending = list(snap.checkpoints)
    for event in services.audit.events(snap.tenant, snap.since_seq, snap.head_seq):
        yield event
        while pending and pending[0]["seq"] <= event["seq"]:
            yield pending.pop(0)
    yield from pending  # beyond the head: the log lost its last events
    head = {
        "type": "head",
        "tenant_id": snap.tenant,
        "since_seq": snap.since_seq,
        "seq": snap.head_seq,
        "hash": snap.head_hash,
        "exported_at": rfc3339(time.time()),
        "checkpoints": len(snap.checkpoints),
    }
    yield services.keyring.signing_keys().sign_with_key_id(head)

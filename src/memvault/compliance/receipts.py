"""The erasure receipt (DESIGN.md "Compliance formats"), built and signed in one place.

Both a user's erase job and an operator's tenant deletion end here, so the two receipts can never
drift apart: `verified` is true only when there are stores and every `remaining` is 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memvault.canonical import rfc3339
from memvault.compliance.signatures import sign_document
from memvault.keyring import SigningKeys


def signed_receipt(
    keys: SigningKeys,
    *,
    receipt_id: str,
    tenant: str,
    subject: Mapping[str, str | None],
    requested_by: str,
    requested_at: float,
    completed_at: float,
    keys_destroyed: int,
    deleted: Mapping[str, int],
    remaining: Mapping[str, int],
    beyond_reach: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """`{"receipt": {...}, "key_id", "signature"}`, one store entry per `remaining` key.

    `beyond_reach`: copies no server can reach (keystore WAL archives, replicas, backups), each
    `{"store", "present", "ages_out_after_days"?, "count"?}`, signed with the rest."""
    stores = [
        {"store": name, "deleted": int(deleted.get(name, 0)), "remaining": int(left)}
        for name, left in sorted(remaining.items())
    ]
    body: dict[str, Any] = {
        "id": receipt_id,
        "tenant_id": tenant,
        "subject": {"user_id": subject.get("user_id"), "agent_id": subject.get("agent_id")},
        "requested_by": requested_by,
        "requested_at": rfc3339(requested_at),
        "completed_at": rfc3339(completed_at),
        "keys_destroyed": int(keys_destroyed),
        "stores": stores,
        "verified": bool(stores) and all(s["remaining"] == 0 for s in stores),
    }
    if beyond_reach is not None:
        body["beyond_reach"] = beyond_reach
    key_id, signature = sign_document(keys, body)
    return {"receipt": body, "key_id": key_id, "signature": signature}

"""Offline verification of audit exports and erasure receipts (what `memvault audit verify` and
`memvault receipt verify` run). Pure functions: no server, no data directory, no keystore.

An auditor can do the same with any SHA-256, JSON and Ed25519 tool: docs/audit.md shows how.
The audit export's checks are `verify_audit` (strict about where an export starts, and about the
signed checkpoints it carries); this module keeps the receipt's, and the names callers import.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memvault.compliance.signatures import verify_document
from memvault.compliance.verify_audit import (
    GENESIS,
    Previous,
    Verdict,
    event_hash,
    read_head,
    verify_audit_export,
)

__all__ = [
    "GENESIS",
    "Previous",
    "Verdict",
    "event_hash",
    "read_head",
    "verify_audit_export",
    "verify_receipt",
]


RECEIPT_FIELDS = frozenset({"receipt", "key_id", "signature"})
JOB_FIELDS = frozenset({"id", "state"})
_NOT_A_RECEIPT = (
    'not a receipt: expected {"receipt", "key_id", "signature"}, alone or with the job\'s "id" '
    'and "state" as POST /v1/admin/erase answers'
)


def unwrap_receipt(document: Any) -> tuple[dict[str, Any] | None, str]:
    """The signed receipt `{"receipt", "key_id", "signature"}` inside `document`, or None and
    why not. Takes the bare receipt (the SDK's `job.document`) and the answer of
    `POST /v1/admin/erase`, `GET /v1/admin/erasures/{id}` or a tenant deletion, which adds the
    job's `id` (the receipt's own id) and `state` (`"done"`) beside the receipt's keys; any
    other key is refused."""
    if not isinstance(document, dict):
        return None, _NOT_A_RECEIPT
    keys = set(document)
    if "state" in keys and document["state"] != "done":
        state = str(document["state"])[:32]
        return None, f"the job is not done (state {state!r}): no receipt yet"
    if not keys >= RECEIPT_FIELDS or not keys <= RECEIPT_FIELDS | JOB_FIELDS:
        return None, _NOT_A_RECEIPT
    receipt = document["receipt"]
    if "id" in keys and (not isinstance(receipt, dict) or receipt.get("id") != document["id"]):
        return None, "the job's id is not the receipt's id"
    return {k: document[k] for k in RECEIPT_FIELDS}, ""


def verify_receipt(document: Any, public_keys: Sequence[Mapping[str, Any]]) -> Verdict:
    """Check an erasure receipt `{"receipt": {...}, "key_id", "signature"}` (bare, or as the API
    answers it, with the job's `id` and `state`): the signature over the
    canonical JSON of `receipt`, and that `verified` is true exactly when every store's
    `remaining` is 0 (see `unwrap_receipt`)."""
    signed, problem = unwrap_receipt(document)
    if signed is None:
        return Verdict(False, problem)
    document = signed
    receipt = document["receipt"]
    if not isinstance(receipt, dict):
        return Verdict(False, "receipt is not an object")
    if not verify_document(receipt, str(document["key_id"]), document["signature"], public_keys):
        return Verdict(False, "the receipt signature does not verify")
    stores = receipt.get("stores")
    if not isinstance(stores, list) or not all(isinstance(s, dict) for s in stores):
        return Verdict(False, "receipt.stores is not a list of stores")
    remaining = [s.get("remaining") for s in stores]
    if not all(isinstance(r, int) and not isinstance(r, bool) for r in remaining):
        return Verdict(False, "a store's remaining count is not an integer")
    all_zero = all(r == 0 for r in remaining)
    verified = receipt.get("verified")
    if verified is not True and verified is not False:
        return Verdict(False, "receipt.verified is not a boolean")
    if verified and not all_zero:
        return Verdict(False, "receipt says verified but a store has remaining items")
    if not verified and all_zero:
        return Verdict(False, "receipt says not verified although every store is at zero")
    state = "verified (every store at zero)" if verified else "NOT verified (items remain)"
    return Verdict(True, f"OK: signature verifies; the erasure is {state}")

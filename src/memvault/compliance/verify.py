"""Offline verification of audit exports and erasure receipts (what `memvault audit verify` and
`memvault receipt verify` run). Pure functions: no server, no data directory, no keystore.

An auditor can do the same with any SHA-256, JSON and Ed25519 tool: docs/audit.md shows how.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memvault.compliance.canonical import canonical_json
from memvault.compliance.signatures import verify_document
from memvault.errors import VaultError

GENESIS = "0" * 64
EVENT_FIELDS = frozenset(
    {"seq", "tenant_id", "at", "actor", "action", "subject", "details", "prev", "hash"}
)
HEAD_FIELDS = frozenset({"type", "tenant_id", "seq", "hash", "exported_at", "key_id", "signature"})


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of a verification: `ok`, and a one-line reason either way."""

    ok: bool
    reason: str


def event_hash(event: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of the canonical JSON of an audit event without its `hash` field."""
    return hashlib.sha256(
        canonical_json({k: v for k, v in event.items() if k != "hash"})
    ).hexdigest()


def verify_audit_export(
    lines: Iterable[str],
    public_keys: Sequence[Mapping[str, Any]],
    *,
    previous_hash: str | None = None,
) -> Verdict:
    """Check an export: seqs continue from the first event's seq without a gap, every `hash`
    matches its event, every `prev` is the previous event's hash (64 zeros before seq 1, or
    `previous_hash` when given: the head hash of the export this one continues), and the head
    (the last line) matches the last event and carries a valid signature."""
    records: list[tuple[int, Any]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            records.append((number, json.loads(line)))
        except ValueError:
            return Verdict(False, f"line {number} is not JSON")
    if not records:
        return Verdict(False, "the export is empty (no head line)")
    head_line, head = records[-1]
    if not isinstance(head, dict) or head.get("type") != "head":
        return Verdict(False, "the last line is not a head line: the export is cut off")
    if set(head) != HEAD_FIELDS:
        return Verdict(False, "the head line does not have the head fields")
    prev: str | None = None
    expected: int | None = None
    for number, event in records[:-1]:
        if not isinstance(event, dict) or set(event) != EVENT_FIELDS:
            return Verdict(False, f"line {number} is not an audit event")
        seq = event["seq"]
        if not isinstance(seq, int) or isinstance(seq, bool):
            return Verdict(False, f"line {number}: seq is not an integer")
        if event["tenant_id"] != head["tenant_id"]:
            return Verdict(False, f"line {number} (seq {seq}) belongs to another tenant")
        if expected is None:
            if seq == 1:
                prev = GENESIS
            elif previous_hash is not None:
                prev = previous_hash
        elif seq != expected:
            return Verdict(False, f"line {number}: seq {seq} follows seq {expected - 1} (gap)")
        if prev is not None and event["prev"] != prev:
            return Verdict(False, f"seq {seq}: prev does not match the previous event's hash")
        try:
            computed = event_hash(event)
        except VaultError:
            return Verdict(False, f"seq {seq}: the event has no canonical form")
        if event["hash"] != computed:
            return Verdict(False, f"seq {seq}: hash does not match the event's content")
        prev, expected = event["hash"], seq + 1
    if expected is not None:
        if head["seq"] != expected - 1 or head["hash"] != prev:
            return Verdict(False, "the head does not match the last event (events missing)")
    elif previous_hash is not None and head["hash"] != previous_hash:
        return Verdict(False, "the head does not continue the previous export")
    body = {k: v for k, v in head.items() if k != "signature"}
    if not verify_document(body, str(head["key_id"]), head["signature"], public_keys):
        return Verdict(False, f"line {head_line}: the head signature does not verify")
    count = len(records) - 1
    if count == 0:
        return Verdict(True, f"OK: no events after seq {head['seq']}; head signature verifies")
    first = records[0][1]["seq"]
    anchor = ""
    if first != 1 and previous_hash is None:
        anchor = (
            f" (starts at seq {first}: pass --previous-hash to check its link to seq {first - 1})"
        )
    return Verdict(
        True, f"OK: {count} events, seq {first}..{head['seq']}, chain and signature verify{anchor}"
    )


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

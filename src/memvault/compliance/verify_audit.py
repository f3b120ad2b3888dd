"""Offline verification of a signed audit export (what `memvault audit verify` runs).

Pure: no server, no data directory, no keystore; only the published public keys. Strict by
default:
- the signed head says where the export starts (`since_seq`). A full export (`since_seq` 0)
  must start at seq 1 and chain from the genesis hash (64 zeros). A partial export must be
  checked against the head of the export it continues (`previous`: its seq and hash, or a hash
  alone), and the verdict says which;
- seqs run without a gap from `since_seq + 1` to the head's seq, every `hash` matches its
  event, every `prev` is the previous event's hash, and the head matches the last event;
- every signed checkpoint the export carries follows the event at its seq and names that
  event's hash; a checkpoint beyond the head means events were removed from the end. The head
  signs how many checkpoints it carries, so none can be dropped from the file.
Heads written before `since_seq` existed (no `since_seq`, no `checkpoints`) still verify when
the export starts at seq 1 or is given its previous head.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memvault.canonical import GENESIS, event_hash
from memvault.compliance.signatures import verify_document
from memvault.errors import VaultError

EVENT_FIELDS = frozenset(
    {"seq", "tenant_id", "at", "actor", "action", "subject", "details", "prev", "hash"}
)
HEAD_FIELDS = frozenset(
    {
        "type",
        "tenant_id",
        "since_seq",
        "seq",
        "hash",
        "exported_at",
        "checkpoints",
        "key_id",
        "signature",
    }
)
LEGACY_HEAD_FIELDS = frozenset(
    {"type", "tenant_id", "seq", "hash", "exported_at", "key_id", "signature"}
)
CHECKPOINT_FIELDS = frozenset({"type", "tenant_id", "seq", "hash", "at", "key_id", "signature"})


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of a verification: `ok`, and a one-line reason either way."""

    ok: bool
    reason: str


@dataclass(frozen=True, slots=True)
class Previous:
    """The head a partial export continues: its hash, its seq when known, and where it came
    from (for the verdict: `--previous-hash`, or the previous export's signed head)."""

    hash: str
    seq: int | None
    source: str


class _Fail(Exception):
    """A verification failure; its message is the verdict's reason."""


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _signed(obj: Mapping[str, Any], public_keys: Sequence[Mapping[str, Any]]) -> bool:
    body = {k: v for k, v in obj.items() if k != "signature"}
    signature = obj.get("signature")
    if not isinstance(signature, str):
        return False
    return verify_document(body, str(obj.get("key_id")), signature, public_keys)


def read_head(lines: Iterable[str], public_keys: Sequence[Mapping[str, Any]]) -> Previous | Verdict:
    """The signed head of a previous export (a whole export, or its head line alone) as the
    `Previous` a partial export continues; a failing `Verdict` when it is not a valid head.

    Only the head's signature is checked here: verify the previous export itself on its own.
    """
    last = next((line for line in reversed(list(lines)) if line.strip()), None)
    try:
        head = json.loads(last) if last is not None else None
    except ValueError:
        return Verdict(False, "the previous export's last line is not JSON")
    if not isinstance(head, dict) or head.get("type") != "head":
        return Verdict(False, "the previous export does not end with a head line")
    if set(head) not in (HEAD_FIELDS, LEGACY_HEAD_FIELDS) or not _int(head["seq"]):
        return Verdict(False, "the previous head does not have the head fields")
    if not _signed(head, public_keys):
        return Verdict(False, "the previous head's signature does not verify")
    return Previous(str(head["hash"]), head["seq"], f"the previous head (seq {head['seq']})")


def verify_audit_export(
    lines: Iterable[str],
    public_keys: Sequence[Mapping[str, Any]],
    *,
    previous_hash: str | None = None,
    previous: Previous | None = None,
) -> Verdict:
    """Check an export strictly (see the module docstring). `previous` (from `read_head`) or
    `previous_hash` anchors a partial export to the head it continues."""
    if previous is None and previous_hash is not None:
        previous = Previous(previous_hash, None, "--previous-hash")
    try:
        return _verify(list(lines), public_keys, previous)
    except _Fail as failure:
        return Verdict(False, str(failure))


def _parse(lines: list[str]) -> list[tuple[int, Any]]:
    records: list[tuple[int, Any]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            records.append((number, json.loads(line)))
        except ValueError:
            raise _Fail(f"line {number} is not JSON") from None
    if not records:
        raise _Fail("the export is empty (no head line)")
    return records


def _start(
    head: dict[str, Any], first_seq: int | None, previous: Previous | None
) -> tuple[int, str, str]:
    """`(since_seq, the hash event since_seq has, how that is known)` for this export."""
    since = head.get("since_seq")
    if since is None:  # a head written before `since_seq` existed
        if previous is None:
            if first_seq == 1:
                return 0, GENESIS, "from the genesis hash"
            raise _Fail(
                "the head does not say where the export starts and the export does not start "
                "at seq 1: pass --previous-hash or --previous (for a full export, --previous-hash "
                "with 64 zeros)"
            )
        since = previous.seq
        if since is None:
            since = first_seq - 1 if first_seq is not None else head["seq"]
    if not _int(since) or since < 0 or since > head["seq"]:
        raise _Fail("the head's since_seq is not a seq at or before its own")
    if since == 0:
        if previous is not None and previous.hash != GENESIS:
            raise _Fail("a full export (since_seq 0) continues the genesis hash, not the one given")
        return 0, GENESIS, "full export, from the genesis hash"
    if previous is None:
        raise _Fail(
            f"partial export (since_seq {since}): check it against the head of the export it "
            "continues: pass --previous-hash or --previous"
        )
    if previous.seq is not None and previous.seq != since:
        raise _Fail(
            f"the previous head ends at seq {previous.seq}, but this export starts after seq "
            f"{since}"
        )
    return (
        since,
        previous.hash,
        f"partial export after seq {since}, checked against {previous.source}",
    )


def _verify(
    lines: list[str], public_keys: Sequence[Mapping[str, Any]], previous: Previous | None
) -> Verdict:
    records = _parse(lines)
    head_line, head = records[-1]
    if not isinstance(head, dict) or head.get("type") != "head":
        raise _Fail("the last line is not a head line: the export is cut off")
    if set(head) not in (HEAD_FIELDS, LEGACY_HEAD_FIELDS) or not _int(head["seq"]):
        raise _Fail("the head line does not have the head fields")
    if not _signed(head, public_keys):
        raise _Fail(f"line {head_line}: the head signature does not verify")
    body = records[:-1]
    first_seq = next(
        (
            r["seq"]
            for _, r in body
            if isinstance(r, dict) and "type" not in r and _int(r.get("seq"))
        ),
        None,
    )
    since, anchor, how = _start(head, first_seq, previous)
    last_seq, last_hash = since, anchor
    events = checkpoints = 0
    for number, record in body:
        if isinstance(record, dict) and record.get("type") == "checkpoint":
            _check_checkpoint(number, record, head, last_seq, last_hash, public_keys)
            checkpoints += 1
            continue
        last_seq, last_hash = _check_event(number, record, head, last_seq, last_hash, events == 0)
        events += 1
    if head["seq"] != last_seq or head["hash"] != last_hash:
        raise _Fail(
            f"the head names seq {head['seq']} but the export ends at seq {last_seq}: "
            "events are missing"
        )
    if "checkpoints" in head and head["checkpoints"] != checkpoints:
        raise _Fail(
            f"the head says the export carries {head['checkpoints']} checkpoints, it carries "
            f"{checkpoints}: checkpoints were removed"
        )
    if events == 0:
        return Verdict(True, f"OK: {how}; no events after seq {since}; head signature verifies")
    return Verdict(
        True,
        f"OK: {how}: {events} events, seq {since + 1}..{head['seq']}, {checkpoints} "
        "checkpoints; chain, checkpoints and signature verify",
    )


def _check_event(
    number: int,
    event: Any,
    head: Mapping[str, Any],
    last_seq: int,
    last_hash: str,
    first: bool,
) -> tuple[int, str]:
    if not isinstance(event, dict) or set(event) != EVENT_FIELDS:
        raise _Fail(f"line {number} is not an audit event")
    seq = event["seq"]
    if not _int(seq):
        raise _Fail(f"line {number}: seq is not an integer")
    if event["tenant_id"] != head["tenant_id"]:
        raise _Fail(f"line {number} (seq {seq}) belongs to another tenant")
    if seq != last_seq + 1:
        if first:
            raise _Fail(
                f"the export starts at seq {seq}, not at seq {last_seq + 1}: its first events "
                "were removed"
            )
        raise _Fail(f"line {number}: seq {seq} follows seq {last_seq} (gap)")
    if event["prev"] != last_hash:
        raise _Fail(f"seq {seq}: prev does not match the previous event's hash")
    try:
        computed = event_hash(event)
    except VaultError:
        raise _Fail(f"seq {seq}: the event has no canonical form") from None
    if event["hash"] != computed:
        raise _Fail(f"seq {seq}: hash does not match the event's content")
    return seq, computed


def _check_checkpoint(
    number: int,
    checkpoint: dict[str, Any],
    head: Mapping[str, Any],
    last_seq: int,
    last_hash: str,
    public_keys: Sequence[Mapping[str, Any]],
) -> None:
    if set(checkpoint) != CHECKPOINT_FIELDS or not _int(checkpoint["seq"]):
        raise _Fail(f"line {number} is not a checkpoint")
    if checkpoint["tenant_id"] != head["tenant_id"]:
        raise _Fail(f"line {number}: the checkpoint belongs to another tenant")
    if not _signed(checkpoint, public_keys):
        raise _Fail(f"line {number}: the checkpoint signature does not verify")
    seq, at = checkpoint["seq"], checkpoint["at"]
    if seq > head["seq"]:
        raise _Fail(
            f"the checkpoint signed at {at} vouches for seq {seq}, beyond the head (seq "
            f"{head['seq']}): events were removed from the end of the log"
        )
    if seq != last_seq:
        raise _Fail(f"line {number}: the checkpoint for seq {seq} does not follow that event")
    if checkpoint["hash"] != last_hash:
        raise _Fail(
            f"seq {seq}: the chain does not match the checkpoint signed at {at}: the log was "
            "edited (events removed or changed and the chain recomputed) after that checkpoint"
        )

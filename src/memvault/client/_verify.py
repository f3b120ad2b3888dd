"""Checks the SDK runs on what the server answered: a signed erase receipt, a strict audit
export, a DSAR stream that must end with its `end` line. Shared by `Client` and `AsyncClient`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from memvault.client.errors import MemvaultError, VerificationError
from memvault.client.models import AuditExport, Erasure


def verified_receipt(job: Erasure, keys: Sequence[Mapping[str, Any]]) -> Erasure:
    """The job with its verdict; `VerificationError` when the signature or counts are wrong."""
    from dataclasses import replace

    from memvault.compliance.verify import verify_receipt

    verdict = verify_receipt(job.document, keys)
    if not verdict.ok:
        raise VerificationError(verdict.reason)
    return replace(job, verdict=verdict.reason)


def audit_from_lines(
    lines: list[str],
    keys: Sequence[Mapping[str, Any]] | None,
    previous_hash: str | None = None,
) -> AuditExport:
    """Parse an export; with `keys`, verify it strictly (chain, checkpoints, head signature; a
    partial export against `previous_hash`) or raise `VerificationError`."""
    records = [json.loads(line) for line in lines if line.strip()]
    if not records or records[-1].get("type") != "head":
        raise MemvaultError("the audit export was cut off (no head line)")
    verdict = None
    if keys is not None:
        from memvault.compliance.verify import verify_audit_export

        result = verify_audit_export(lines, keys, previous_hash=previous_hash)
        if not result.ok:
            raise VerificationError(result.reason)
        verdict = result.reason
    body = records[:-1]
    return AuditExport(
        events=[r for r in body if r.get("type") != "checkpoint"],
        head=records[-1],
        verdict=verdict,
        lines=lines,
        checkpoints=[r for r in body if r.get("type") == "checkpoint"],
    )


class DsarCheck:
    """Tracks a DSAR stream: it must end with its `end` line, or it was cut off."""

    def __init__(self) -> None:
        self.ended = False

    def line(self, raw: str) -> dict[str, Any] | None:
        if not raw.strip():
            return None
        record: dict[str, Any] = json.loads(raw)
        if record.get("type") == "end":
            self.ended = True
        return record

    def finish(self) -> None:
        if not self.ended:
            raise MemvaultError("the DSAR export was cut off (no end line)")

"""The signed audit export and the public signing keys (DESIGN "Compliance formats").

- `GET /v1/admin/audit/export?since_seq=N` (tenant admins and auditors) streams the tenant's audit
  events with `seq > N` as JSON lines, each signed audit checkpoint after the event it vouches
  for, then the signed head line `{"type": "head", "tenant_id", "since_seq", "seq", "hash",
  "exported_at", "checkpoints", "key_id", "signature"}` (`compliance.audit_export`). The export is
  a snapshot: it ends at the last event that existed when it started, which the head names.
  `GET /v1/admin/audit` is the same export (kept for existing clients).
- `GET /v1/receipt-keys` (no auth): every Ed25519 public key that signed receipts or heads.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from memvault.api.deps import AuditReaderDep, ServicesDep, only_query_params, tenant_of
from memvault.compliance.audit_export import ExportSnapshot, records, snapshot
from memvault.runtime.factory import Services

router = APIRouter(tags=["audit"])

NDJSON = "application/x-ndjson"
MAX_SEQ = 2**31 - 1

SinceSeq = Annotated[
    int,
    Query(
        ge=0,
        le=MAX_SEQ,
        description="Export the events after this seq (0: from the start). The first event's "
        "`prev` is then the hash of event `since_seq`, the last head of an earlier export.",
    ),
]


class ReceiptKey(BaseModel):
    """One Ed25519 signing key of this deployment."""

    key_id: str
    alg: Literal["Ed25519"]
    public_key: str = Field(description="Base64 of the 32 raw public key bytes.")
    created_at: str = Field(description="RFC 3339 UTC.")


class ReceiptKeys(BaseModel):
    """Every signing key, current and retired (old signatures keep verifying)."""

    keys: list[ReceiptKey]


def _line(obj: dict[str, Any]) -> bytes:
    return (json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def _export(services: Services, snap: ExportSnapshot) -> Iterator[bytes]:
    for record in records(services, snap):
        yield _line(record)


_SINCE_SEQ_ONLY = [Depends(only_query_params("since_seq"))]


@router.get(
    "/v1/admin/audit",
    name="audit",
    description="The same export as `/v1/admin/audit/export` (the older path).",
    response_class=StreamingResponse,
    dependencies=_SINCE_SEQ_ONLY,
)
@router.get(
    "/v1/admin/audit/export", response_class=StreamingResponse, dependencies=_SINCE_SEQ_ONLY
)
def export_audit(
    principal: AuditReaderDep, services: ServicesDep, since_seq: SinceSeq = 0
) -> StreamingResponse:
    """The tenant's hash-chained audit events after `since_seq` as JSON lines, then a signed
    head line. Ids, counts and detector names only, never text; user ids are pseudonyms."""
    return _respond(principal, services, since_seq)


def _respond(principal: Any, services: Services, since_seq: int) -> StreamingResponse:
    tenant = tenant_of(principal)
    snap = snapshot(services, tenant, since_seq)
    # Audited after the snapshot: the export event itself appears in the next export.
    services.audit.record(
        tenant,
        principal.key_id,
        "audit.exported",
        since_seq=since_seq,
        until_seq=snap.head_seq,
        role=principal.role,
    )
    stream = _export(services, snap)
    return StreamingResponse(stream, media_type=NDJSON)


@router.get("/v1/receipt-keys", tags=["ops"])
def receipt_keys(services: ServicesDep) -> ReceiptKeys:
    """The deployment's Ed25519 public keys (no auth): verify receipts and export heads offline."""
    keys = services.keyring.signing_keys().public_keys()
    return ReceiptKeys(keys=[ReceiptKey(**k) for k in keys])

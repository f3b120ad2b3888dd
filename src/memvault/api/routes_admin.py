"""Tenant-admin endpoints: keys, erasure, audit, refusal counts. The tenant comes from the key."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Depends, Response
from fastapi.responses import PlainTextResponse

from memvault.api.deps import AdminDep, AuditReaderDep, ServicesDep, only_query_params
from memvault.api.schemas import EraseRequest, ErasureOut, IssuedKeyOut, IssueKey, ScreenPolicyIn
from memvault.errors import InvalidRequest
from memvault.scope import validate_id

router = APIRouter(prefix="/v1/admin", tags=["admin"])


def _tenant(principal: Any) -> str:
    tenant: str | None = principal.tenant
    if tenant is None:
        raise InvalidRequest("this key has no tenant")
    return tenant


@router.post("/keys", status_code=201, dependencies=[Depends(only_query_params())])
def issue_key(body: IssueKey, admin: AdminDep, services: ServicesDep) -> IssuedKeyOut:
    """Issue a key for a user and agent of the admin's tenant. The secret is shown once."""
    tenant = _tenant(admin)
    issued = services.keys.issue(tenant, body.user_id, body.agent_id, body.role)
    services.audit.record(tenant, admin.key_id, "key.issued", key_id=issued.key_id, role=body.role)
    return IssuedKeyOut(
        key_id=issued.key_id,
        api_key=issued.api_key,
        tenant_id=tenant,
        user_id=issued.user,
        agent_id=issued.agent,
        role=issued.role,
    )


@router.delete("/keys/{key_id}", status_code=204, dependencies=[Depends(only_query_params())])
def revoke_key(key_id: str, admin: AdminDep, services: ServicesDep) -> Response:
    """Revoke a key of the admin's tenant; it stops working at once."""
    tenant = _tenant(admin)
    services.keys.revoke(tenant, key_id)
    services.audit.record(tenant, admin.key_id, "key.revoked", key_id=key_id)
    return Response(status_code=204)


@router.post("/erase", dependencies=[Depends(only_query_params())])
def erase(body: EraseRequest, admin: AdminDep, services: ServicesDep) -> ErasureOut:
    """Shred a user's (or one agent's) keys, delete vectors and rows, and verify every count."""
    tenant = _tenant(admin)
    validate_id(body.user_id, "user_id")
    if body.agent_id is not None:
        validate_id(body.agent_id, "agent_id")
    report = services.eraser.erase(tenant, body.user_id, body.agent_id)
    services.audit.record(
        tenant,
        admin.key_id,
        "erase",
        user_id=body.user_id,
        agent_id=body.agent_id,
        rows=report.rows_deleted,
        vectors=report.vectors_deleted,
        keys=report.keys_destroyed,
        verified=report.verified,
    )
    return ErasureOut(
        tenant_id=tenant,
        user_id=report.user,
        agent_id=report.agent,
        keys_destroyed=report.keys_destroyed,
        vectors_deleted=report.vectors_deleted,
        rows_deleted=report.rows_deleted,
        links_deleted=report.links_deleted,
        remaining=report.remaining,
        verified=report.verified,
    )


@router.get("/audit", dependencies=[Depends(only_query_params())])
def audit(principal: AuditReaderDep, services: ServicesDep) -> PlainTextResponse:
    """The tenant's hash-chained audit log as JSON lines (ids and counts, never text)."""
    tenant = _tenant(principal)
    lines = [json.dumps(e, separators=(",", ":")) for e in services.audit.events(tenant)]
    return PlainTextResponse(
        "\n".join(lines) + ("\n" if lines else ""), media_type="application/x-ndjson"
    )


@router.get("/refusals", dependencies=[Depends(only_query_params())])
def refusals(principal: AuditReaderDep, services: ServicesDep) -> dict[str, dict[str, int]]:
    """Refused writes per detector (no content is ever kept)."""
    return {"refusals": services.gate.refusal_counts(_tenant(principal))}


@router.put("/policy", dependencies=[Depends(only_query_params())])
def set_policy(body: ScreenPolicyIn, admin: AdminDep, services: ServicesDep) -> ScreenPolicyIn:
    """Set the tenant's write-screen policy (each PII type: redact, refuse or allow)."""
    tenant = _tenant(admin)
    services.tenants.set_policy(tenant, body.model_dump_json())
    services.gate.forget_policy(tenant)
    services.audit.record(tenant, admin.key_id, "policy.set", **body.model_dump())
    return body


@router.get("/policy", dependencies=[Depends(only_query_params())])
def get_policy(principal: AuditReaderDep, services: ServicesDep) -> ScreenPolicyIn:
    """The tenant's write-screen policy (defaults: redact every PII type)."""
    policy = services.gate.policy(_tenant(principal))
    if policy is None:
        return ScreenPolicyIn()
    return ScreenPolicyIn(
        pii={k: v.value for k, v in policy.pii.items()},  # type: ignore[misc]
        allow_suspicious_shared=policy.allow_suspicious_shared,
    )

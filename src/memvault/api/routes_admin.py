"""Tenant-admin endpoints: keys, erasure, audit, refusal counts. The tenant comes from the key."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Response

from memvault.api.deps import AdminDep, AuditReaderDep, ServicesDep, only_query_params, tenant_of
from memvault.api.schemas_admin import (
    IssuedKeyOut,
    IssueKey,
    ReadAlertsPolicy,
    ScreenPolicyIn,
    TtlDefaults,
)

router = APIRouter(prefix="/v1/admin", tags=["admin"])


@router.post("/keys", status_code=201, dependencies=[Depends(only_query_params())])
def issue_key(body: IssueKey, admin: AdminDep, services: ServicesDep) -> IssuedKeyOut:
    """Issue a key for a user and agent of the admin's tenant. The secret is shown once.

    `isolation: "dedicated"` makes the agent Mode B (docs/exfiltration.md, "Dedicated agents");
    an agent's isolation never changes: a key asking for the other mode answers 409
    `isolation_conflict`."""
    tenant = tenant_of(admin)
    issued = services.keys.issue(tenant, body.user_id, body.agent_id, body.role, body.isolation)
    services.audit.record(
        tenant,
        admin.key_id,
        "key.issued",
        key_id=issued.key_id,
        role=body.role,
        isolation=issued.isolation,
    )
    return IssuedKeyOut(
        key_id=issued.key_id,
        api_key=issued.api_key,
        tenant_id=tenant,
        user_id=issued.user,
        agent_id=issued.agent,
        role=issued.role,
        isolation="dedicated" if issued.isolation == "dedicated" else "shared",
    )


@router.delete("/keys/{key_id}", status_code=204, dependencies=[Depends(only_query_params())])
def revoke_key(key_id: str, admin: AdminDep, services: ServicesDep) -> Response:
    """Revoke a key of the admin's tenant; it stops working at once."""
    tenant = tenant_of(admin)
    services.keys.revoke(tenant, key_id)
    services.audit.record(tenant, admin.key_id, "key.revoked", key_id=key_id)
    return Response(status_code=204)


@router.get("/refusals", dependencies=[Depends(only_query_params())])
def refusals(principal: AuditReaderDep, services: ServicesDep) -> dict[str, dict[str, int]]:
    """Refused writes per detector (no content is ever kept)."""
    return {"refusals": services.gate.refusal_counts(tenant_of(principal))}


@router.put("/policy", dependencies=[Depends(only_query_params())])
def set_policy(body: ScreenPolicyIn, admin: AdminDep, services: ServicesDep) -> ScreenPolicyIn:
    """Set the tenant's policy: each PII type (redact, refuse or allow) and default TTLs.

    A TTL default applies to notes written after the change, never to notes already stored.
    """
    tenant = tenant_of(admin)
    services.tenants.set_policy(tenant, body.model_dump_json())
    services.gate.forget_policy(tenant)
    services.alerts.forget(tenant)
    detail = body.model_dump(exclude={"ttl_days"})
    # The audit log holds integers, never floats: the defaults are recorded in whole seconds.
    detail["ttl_seconds"] = {
        kind: None if days is None else round(days * 86_400)
        for kind, days in body.ttl_days.model_dump().items()
    }
    services.audit.record(tenant, admin.key_id, "policy.set", **detail)
    return body


@router.get("/policy", dependencies=[Depends(only_query_params())])
def get_policy(principal: AuditReaderDep, services: ServicesDep) -> ScreenPolicyIn:
    """The tenant's policy (defaults: redact every PII type, no default TTL)."""
    stored = services.gate.tenant_policy(tenant_of(principal))
    ttl = TtlDefaults(**dict(stored.ttl_days))
    policy = stored.screen
    llm = stored.llm if stored.llm in ("off", "anthropic") else None
    alerts = (
        ReadAlertsPolicy.model_validate_json(stored.read_alerts)
        if stored.read_alerts
        else ReadAlertsPolicy()
    )
    if policy is None:
        return ScreenPolicyIn(
            ttl_days=ttl,
            llm=llm,  # type: ignore[arg-type]
            timezone=stored.timezone,
            read_alerts=alerts,
        )
    return ScreenPolicyIn(
        pii={k: v.value for k, v in policy.pii.items()},  # type: ignore[misc]
        allow_suspicious_shared=policy.allow_suspicious_shared,
        ttl_days=ttl,
        llm=llm,  # type: ignore[arg-type]
        timezone=stored.timezone,
        read_alerts=alerts,
    )

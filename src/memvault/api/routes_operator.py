"""Operator endpoints: create and delete tenants."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from memvault.api.deps import OperatorDep, ServicesDep, only_query_params
from memvault.api.schemas import CreateTenant, IssuedKeyOut
from memvault.scope import validate_id

router = APIRouter(prefix="/v1/operator", tags=["operator"])


@router.post("/tenants", status_code=201, dependencies=[Depends(only_query_params())])
def create_tenant(body: CreateTenant, _op: OperatorDep, services: ServicesDep) -> IssuedKeyOut:
    """Create a tenant. The response holds its first tenant-admin key (shown once)."""
    issued = services.tenants.create(body.tenant_id)
    services.audit.record(issued.tenant, "operator", "tenant.created", key_id=issued.key_id)
    return IssuedKeyOut(
        key_id=issued.key_id,
        api_key=issued.api_key,
        tenant_id=issued.tenant,
        user_id=issued.user,
        agent_id=issued.agent,
        role=issued.role,
    )


@router.delete("/tenants/{tenant_id}", dependencies=[Depends(only_query_params())])
def delete_tenant(tenant_id: str, _op: OperatorDep, services: ServicesDep) -> dict[str, object]:
    """Delete a tenant: shred its keys, drop its vector namespace, delete its rows."""
    validate_id(tenant_id, "tenant_id")
    services.tenants.require(tenant_id)
    counts = services.eraser.drop_tenant(tenant_id)
    return {"tenant_id": tenant_id, **counts}

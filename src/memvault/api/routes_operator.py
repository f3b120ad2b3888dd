"""Operator endpoints: create tenants (deletion, with its receipt: `routes_erasure`), and the
index status."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from memvault.api.deps import OperatorDep, ServicesDep, only_query_params
from memvault.api.schemas_admin import CreateTenant, IndexStatusOut, IssuedKeyOut

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


@router.get("/index", dependencies=[Depends(only_query_params())])
def index_status(_op: OperatorDep, services: ServicesDep) -> IndexStatusOut:
    """The indexing rules and model serving, and each tenant's notes whose point is stale
    (built under older rules or another model; the background reindex rebuilds them)."""
    from memvault.vault.reindex import Reindexer

    status = Reindexer(services.vault).status()
    return IndexStatusOut(
        index_version=status.index_version,
        model_id=status.model_id,
        stale_notes=status.total_stale,
        stale_by_tenant=status.stale,
    )

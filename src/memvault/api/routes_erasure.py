"""Erasure endpoints: erase jobs and their signed receipts, the deletion inventory, tenant deletion.

`POST /v1/admin/erase` starts a durable job: `200` with the signed receipt when it finished
within `app.state.erase_wait` seconds, else `202` with the job (poll
`GET /v1/admin/erasures/{id}`). Receipts follow DESIGN.md "Compliance formats" and verify offline
with `memvault receipt verify`.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse

from memvault.api.deps import (
    AdminDep,
    AuditReaderDep,
    OperatorDep,
    ServicesDep,
    only_query_params,
    tenant_of,
)
from memvault.api.schemas_admin import EraseRequest
from memvault.compliance import inventory
from memvault.compliance.erase import ScrubIncomplete
from memvault.compliance.wiring import Compliance
from memvault.scope import validate_id
from memvault.store.scoping import OwnedBy

router = APIRouter(tags=["erasure"])

DEFAULT_ERASE_WAIT = 5.0


def _compliance(request: Request) -> Compliance:
    compliance: Compliance = request.app.state.compliance
    return compliance


@router.post("/v1/admin/erase", dependencies=[Depends(only_query_params())])
def erase(
    body: EraseRequest, request: Request, admin: AdminDep, services: ServicesDep
) -> JSONResponse:
    """Erase a user (or one agent of a user): revoke, shred, delete, scrub, verify, sign.

    `200` with the signed receipt when done quickly, `202` with the job otherwise.
    """
    tenant = tenant_of(admin)
    validate_id(body.user_id, "user_id")
    if body.agent_id is not None:
        validate_id(body.agent_id, "agent_id")
    jobs = _compliance(request).erasures
    wait = float(getattr(request.app.state, "erase_wait", DEFAULT_ERASE_WAIT))
    job_id, receipt = jobs.submit(tenant, body.user_id, body.agent_id, admin.key_id, wait)
    services.audit.record(
        tenant, admin.key_id, "erase.requested", subject=_subject(body), job_id=job_id
    )
    if receipt is None:
        return JSONResponse(jobs.view(tenant, job_id), status_code=202)
    services.audit.record(
        tenant,
        admin.key_id,
        "erase.completed",
        subject=_subject(body),
        job_id=job_id,
        keys=receipt["receipt"]["keys_destroyed"],
        verified=receipt["receipt"]["verified"],
    )
    return JSONResponse({"id": job_id, "state": "done", **receipt}, status_code=200)


def _subject(body: EraseRequest) -> dict[str, str | None]:
    return {"user_id": body.user_id, "agent_id": body.agent_id}


@router.get("/v1/admin/erasures/{job_id}", dependencies=[Depends(only_query_params())])
def erasure(job_id: str, request: Request, principal: AuditReaderDep) -> dict[str, Any]:
    """An erase job: its progress, or its signed receipt once done."""
    return _compliance(request).erasures.view(tenant_of(principal), job_id)


@router.get("/v1/admin/erasures", dependencies=[Depends(only_query_params("limit"))])
def erasures(
    request: Request, principal: AuditReaderDep, limit: int = Query(100, ge=1, le=1000)
) -> dict[str, Any]:
    """The tenant's erase jobs, newest first."""
    return {"erasures": _compliance(request).erasures.list(tenant_of(principal), limit)}


@router.get("/v1/admin/inventory", dependencies=[Depends(only_query_params("user_id", "agent_id"))])
def deletion_inventory(
    principal: AuditReaderDep,
    services: ServicesDep,
    user_id: str = Query(..., max_length=128),
    agent_id: str | None = Query(None, max_length=128),
) -> dict[str, Any]:
    """Per store of the deletion inventory: what it holds about the user, and how much."""
    validate_id(user_id, "user_id")
    if agent_id is not None:
        validate_id(agent_id, "agent_id")
    subject = OwnedBy(tenant_of(principal), user_id, agent_id)
    return {
        "user_id": user_id,
        "agent_id": agent_id,
        "stores": inventory.counts(services, subject),
    }


@router.delete(
    "/v1/operator/tenants/{tenant_id}",
    dependencies=[Depends(only_query_params())],
    responses={202: {"description": "The scrub was blocked: the deletion finishes later"}},
)
def deletetenant_of(
    tenant_id: str, request: Request, _op: OperatorDep, services: ServicesDep
) -> Any:
    """Delete a tenant (keys, vectors, rows) and return the signed receipt.

    When a reader of the data store blocked the scrub, the answer is `202` with the deletion's
    id: the keys are shredded and the rows deleted, and the maintenance sweeper finishes the
    scrub and signs the receipt (`GET /v1/operator/tenant-deletions/{id}`).
    """
    validate_id(tenant_id, "tenant_id")
    services.tenants.require(tenant_id)
    deletions = _compliance(request).tenant_deletions
    job_id = deletions.start(tenant_id)
    try:
        receipt = deletions.run(job_id)
    except ScrubIncomplete:
        return JSONResponse(deletions.view(job_id), status_code=202)
    return {"id": job_id, "state": "done", **receipt}


@router.get("/v1/operator/tenant-deletions/{job_id}", dependencies=[Depends(only_query_params())])
def tenant_deletion(job_id: str, request: Request, _op: OperatorDep) -> dict[str, Any]:
    """A tenant deletion: its signed receipt when done, else its state and last step."""
    return _compliance(request).tenant_deletions.view(job_id)

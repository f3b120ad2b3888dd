"""The operator's Tenants page: list, create (the first admin key shown once), delete.

Deleting a tenant runs the REST route's function (keys, vectors, rows, data keys) and shows the
signed receipt, verified against the published keys. The operator never sees tenant data here:
tenant ids only.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from memvault.api import routes_erasure, routes_operator
from memvault.api.schemas_admin import CreateTenant
from memvault.console import web
from memvault.console.compliance_pages import receipt_json, receipt_verdict, verified

router = APIRouter(prefix=web.PREFIX, include_in_schema=False)


@router.get("/tenants")
def tenants_page(request: Request, visitor: web.VisitorDep) -> Response:
    web.require(request, visitor, web.OPERATORS)
    return _tenants(request, visitor)


@router.post("/tenants")
def create_tenant(request: Request, visitor: web.VisitorDep, form: web.CheckedForm) -> Response:
    with web.acting(request, visitor, web.OPERATORS) as services:
        body = CreateTenant(tenant_id=form.get("tenant_id", "").strip())
        issued = routes_operator.create_tenant(body, visitor.principal, services)
    return _tenants(request, visitor, created=issued.model_dump(), status=201)


@router.post("/tenants/{tenant_id}/delete")
def delete_tenant(
    request: Request, tenant_id: str, visitor: web.VisitorDep, form: web.CheckedForm
) -> Response:
    """Delete a tenant; the form must repeat the tenant id (a deliberate, irreversible act)."""
    web.require(request, visitor, web.OPERATORS)
    if form.get("confirm", "").strip() != tenant_id:
        raise web.ConsoleError(422, "confirm: type the tenant id to delete it")
    services = web.services_of(request)
    with web.shown_as_page():
        job = routes_erasure.deletetenant_of(tenant_id, request, visitor.principal, services)
    verdict = receipt_verdict(services, job)
    deleted = {
        "job": job,
        "verdict": verdict,
        "verified": verified(verdict, job["receipt"]),
        "receipt_json": receipt_json(job),
    }
    return _tenants(request, visitor, deleted=deleted)


def _tenants(
    request: Request,
    visitor: web.Visitor,
    *,
    created: dict[str, Any] | None = None,
    deleted: dict[str, Any] | None = None,
    status: int = 200,
) -> Response:
    with web.shown_as_page():
        tenants = sorted(web.services_of(request).tenants.all())
    return web.show(
        request,
        visitor,
        "tenants",
        tenants=tenants,
        created=created,
        deleted=deleted,
        status=status,
    )

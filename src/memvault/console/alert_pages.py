"""The read alerts page (issue 32): alerts that fired, and the resume of a suspended key.

Open to tenant admins and auditors; resuming a key is for tenant admins and calls the REST
route's function, so it is checked and audited exactly as `POST /v1/admin/keys/{id}/resume`.
Alerts hold ids and counts only; no page shows memory text.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from memvault.api import routes_webhooks
from memvault.console import web

router = APIRouter(prefix=web.PREFIX, include_in_schema=False)


@router.get("/alerts")
def alerts_page(request: Request, visitor: web.VisitorDep) -> Response:
    web.require(request, visitor, web.READERS)
    services = web.services_of(request)
    with web.shown_as_page():
        alerts = routes_webhooks.alerts(visitor.principal, services, 200)["alerts"]
        hooks = routes_webhooks.list_webhooks(visitor.principal, services)["webhooks"]
    return web.show(
        request,
        visitor,
        "alerts",
        alerts=alerts,
        webhooks=[w.model_dump() for w in hooks],
        resumed=request.query_params.get("resumed"),
    )


@router.post("/alerts/resume/{key_id}")
def resume_key(
    request: Request, key_id: str, visitor: web.VisitorDep, _form: web.CheckedForm
) -> Response:
    """Lift a read alert's suspension of a key."""
    with web.acting(request, visitor, web.ADMINS) as services:
        routes_webhooks.resume_key(key_id, visitor.principal, services)
    return web.redirect(f"/alerts?resumed={key_id}")

"""Tenant-admin routes of issue 32: webhook endpoints, their deliveries, read alerts, and the
resume of a key a read alert suspended. The tenant comes from the key."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Response

from memvault.api.deps import AdminDep, AuditReaderDep, ServicesDep, only_query_params, tenant_of
from memvault.api.schemas_webhooks import WebhookCreated, WebhookIn, WebhookOut

router = APIRouter(prefix="/v1/admin", tags=["admin"])


@router.post("/webhooks", status_code=201, dependencies=[Depends(only_query_params())])
def create_webhook(body: WebhookIn, admin: AdminDep, services: ServicesDep) -> WebhookCreated:
    """Add an endpoint for the listed event types. Its signing secret is shown once."""
    tenant = tenant_of(admin)
    webhook_id, secret = services.webhooks.create(tenant, body.url, list(body.events))
    services.audit.record(
        tenant, admin.key_id, "webhook.created", webhook=webhook_id, events=len(body.events)
    )
    listed = {w["id"]: w for w in services.webhooks.endpoints(tenant)}[webhook_id]
    return WebhookCreated(**listed, secret=secret)


@router.get("/webhooks", dependencies=[Depends(only_query_params())])
def list_webhooks(principal: AuditReaderDep, services: ServicesDep) -> dict[str, list[WebhookOut]]:
    """The tenant's endpoints (never their secrets)."""
    found = services.webhooks.endpoints(tenant_of(principal))
    return {"webhooks": [WebhookOut(**w) for w in found]}


@router.delete(
    "/webhooks/{webhook_id}", status_code=204, dependencies=[Depends(only_query_params())]
)
def delete_webhook(webhook_id: str, admin: AdminDep, services: ServicesDep) -> Response:
    """Remove an endpoint; its pending deliveries are dropped."""
    tenant = tenant_of(admin)
    services.webhooks.delete(tenant, webhook_id)
    services.audit.record(tenant, admin.key_id, "webhook.deleted", webhook=webhook_id[:32])
    return Response(status_code=204)


@router.get("/webhooks/deliveries", dependencies=[Depends(only_query_params("limit"))])
def deliveries(
    principal: AuditReaderDep, services: ServicesDep, limit: int = Query(100, ge=1, le=1000)
) -> dict[str, list[dict[str, Any]]]:
    """The most recent deliveries: event type, status, attempts, last HTTP status."""
    return {"deliveries": services.webhooks.deliveries(tenant_of(principal), limit)}


@router.get("/alerts", dependencies=[Depends(only_query_params("limit"))])
def alerts(
    principal: AuditReaderDep, services: ServicesDep, limit: int = Query(100, ge=1, le=1000)
) -> dict[str, list[dict[str, Any]]]:
    """Read alerts that fired, newest first: key id, rule, counts, note ids (never text)."""
    return {"alerts": services.alerts.list(tenant_of(principal), limit)}


@router.post("/keys/{key_id}/resume", status_code=204, dependencies=[Depends(only_query_params())])
def resume_key(key_id: str, admin: AdminDep, services: ServicesDep) -> Response:
    """Lift a read alert's suspension of a key; it authenticates again at once."""
    tenant = tenant_of(admin)
    services.keys.suspend(tenant, key_id, suspended=False)
    services.audit.record(tenant, admin.key_id, "key.resumed", key_id=key_id)
    return Response(status_code=204)

"""Erasures (start, watch, download and verify the signed receipt) and the audit log.

A receipt is verified on the server with `memvault.compliance.verify.verify_receipt` against the
deployment's published keys (the list `GET /v1/receipt-keys` serves), exactly as an auditor
would verify it offline; the page says "verified" only when both the signature holds and every
store of the inventory is at zero. The audit page verifies the whole chain the same way.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from memvault.api import routes_audit, routes_erasure
from memvault.api.schemas_admin import EraseRequest
from memvault.compliance.verify import Verdict, verify_receipt
from memvault.console import reads, web
from memvault.runtime.factory import Services

router = APIRouter(prefix=web.PREFIX, include_in_schema=False)

PROGRESS_REFRESH_SECONDS = 2
"""A running erasure's page reloads itself this often (a meta refresh: no script)."""


def receipt_verdict(services: Services, job: dict[str, Any]) -> Verdict:
    """The offline verification of a finished job's receipt, against the published keys."""
    document = {k: job[k] for k in ("receipt", "key_id", "signature") if k in job}
    return verify_receipt(document, services.keyring.signing_keys().public_keys())


def verified(verdict: Verdict, receipt: dict[str, Any]) -> bool:
    """Signature valid and the receipt says every store is at zero."""
    return verdict.ok and receipt.get("verified") is True


@router.get("/erasures")
def erasures_page(request: Request, visitor: web.VisitorDep) -> Response:
    with web.acting(request, visitor, web.READERS):
        jobs = routes_erasure.erasures(request, visitor.principal, 100)["erasures"]
    return web.show(request, visitor, "erasures", jobs=jobs)


@router.post("/erasures")
def start_erasure(request: Request, visitor: web.VisitorDep, form: web.CheckedForm) -> Response:
    """Start an erase job (the REST route's function: audited, durable, signed)."""
    with web.acting(request, visitor, web.ADMINS) as services:
        body = EraseRequest(
            user_id=form.get("user_id", "").strip(), agent_id=web.field(form, "agent_id")
        )
        answer = routes_erasure.erase(body, request, visitor.principal, services)
    job_id = json.loads(bytes(answer.body))["id"]
    return web.redirect(f"/erasures/{job_id}")


@router.get("/erasures/{job_id}")
def erasure_page(request: Request, job_id: str, visitor: web.VisitorDep) -> Response:
    web.require(request, visitor, web.READERS)
    services = web.services_of(request)
    with web.shown_as_page():
        job = routes_erasure.erasure(job_id, request, visitor.principal)
    verdict = receipt_verdict(services, job) if job["state"] == "done" else None
    return web.show(
        request,
        visitor,
        "erasures",
        "erasure.html",
        job=job,
        verdict=verdict,
        verified=verdict is not None and verified(verdict, job["receipt"]),
        receipt_json=None if verdict is None else receipt_json(job),
        refresh=None if verdict is not None else PROGRESS_REFRESH_SECONDS,
    )


@router.get("/erasures/{job_id}/receipt.json")
def download_receipt(request: Request, job_id: str, visitor: web.VisitorDep) -> Response:
    """The signed receipt as `memvault receipt verify` takes it."""
    with web.acting(request, visitor, web.READERS):
        job = routes_erasure.erasure(job_id, request, visitor.principal)
    if job["state"] != "done":
        raise web.ConsoleError(404, "no receipt for this erasure yet")
    headers = {
        **web.SECURITY_HEADERS,
        "Content-Disposition": f'attachment; filename="receipt-{job["id"]}.json"',
    }
    return Response(receipt_json(job), media_type="application/json", headers=headers)


def receipt_json(job: dict[str, Any]) -> str:
    document = {k: job[k] for k in ("receipt", "key_id", "signature")}
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


@router.get("/audit")
def audit_page(request: Request, visitor: web.VisitorDep) -> Response:
    web.require(request, visitor, web.READERS)
    action = request.query_params.get("action") or None
    with web.shown_as_page():
        view = reads.audit_view(web.services_of(request), visitor.tenant, action)
    if action is not None and action not in view.actions:
        action = None  # never echo an action the log does not have
    rows = [
        {
            **event,
            "subject_text": _compact(event.get("subject")),
            "details_text": _compact(event.get("details")),
        }
        for event in view.events
    ]
    return web.show(request, visitor, "audit", view=view, rows=rows, action=action)


@router.get("/audit/export")
def export_audit(request: Request, visitor: web.VisitorDep) -> Response:
    """The signed export of `GET /v1/admin/audit/export` (audited as `audit.exported`)."""
    with web.acting(request, visitor, web.READERS) as services:
        response = routes_audit.export_audit(visitor.principal, services, 0)
    response.headers["Content-Disposition"] = f'attachment; filename="audit-{visitor.tenant}.jsonl"'
    response.headers.update(web.SECURITY_HEADERS)
    return response


def _compact(value: Any) -> str:
    if not value:
        return ""
    return json.dumps(value, sort_keys=True, separators=(", ", ": "))

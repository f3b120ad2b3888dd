"""Tenant pages: users and their note counts, API keys, refusals by detector, the policy.

Reads are open to tenant admins and auditors, actions to tenant admins: the REST API's rules,
checked with its own `check_role`. Actions call the REST routes' functions, so a key issued
here is issued and audited exactly as `POST /v1/admin/keys` does it. No page shows memory text.
"""

from __future__ import annotations

from typing import Any, get_args

from fastapi import APIRouter, Request
from fastapi.responses import Response

from memvault.api import routes_admin, routes_erasure
from memvault.api.schemas_admin import IssueKey, ScreenPolicyIn, TtlDefaults
from memvault.console import reads, web
from memvault.tenancy.principals import TENANT_ROLES

router = APIRouter(prefix=web.PREFIX, include_in_schema=False)

# From the schema itself, so the form cannot drift from what `PUT /v1/admin/policy` accepts.
_PII_KEY, _PII_VALUE = get_args(ScreenPolicyIn.model_fields["pii"].annotation)
_PII_TYPES: tuple[str, ...] = get_args(_PII_KEY)
_PII_ACTIONS: tuple[str, ...] = get_args(_PII_VALUE)
NOTE_TYPES = tuple(TtlDefaults.model_fields)


@router.get("/users")
def users_page(request: Request, visitor: web.VisitorDep) -> Response:
    with web.acting(request, visitor, web.READERS) as services:
        rows = reads.users(services, visitor.tenant)
    return web.show(request, visitor, "users", users=rows)


@router.get("/users/{user_id}")
def user_page(request: Request, user_id: str, visitor: web.VisitorDep) -> Response:
    """The deletion inventory of one user: what each store holds about them, counts only."""
    with web.acting(request, visitor, web.READERS) as services:
        inventory = routes_erasure.deletion_inventory(visitor.principal, services, user_id, None)
    return web.show(request, visitor, "users", "user.html", user_id=user_id, inventory=inventory)


@router.get("/keys")
def keys_page(request: Request, visitor: web.VisitorDep) -> Response:
    web.require(request, visitor, web.ADMINS)
    return _keys(request, visitor, issued=None, revoked=request.query_params.get("revoked"))


@router.post("/keys")
def issue_key(request: Request, visitor: web.VisitorDep, form: web.CheckedForm) -> Response:
    """Issue a key; the response is the only place its secret ever appears."""
    with web.acting(request, visitor, web.ADMINS) as services:
        body = IssueKey(
            user_id=form.get("user_id", "").strip(),
            agent_id=form.get("agent_id", "").strip(),
            role=form.get("role", "agent"),  # type: ignore[arg-type]
        )
        issued = routes_admin.issue_key(body, visitor.principal, services)
    return _keys(request, visitor, issued=issued.model_dump(), revoked=None, status=201)


@router.post("/keys/{key_id}/revoke")
def revoke_key(
    request: Request, key_id: str, visitor: web.VisitorDep, _form: web.CheckedForm
) -> Response:
    with web.acting(request, visitor, web.ADMINS) as services:
        routes_admin.revoke_key(key_id, visitor.principal, services)
    return web.redirect(f"/keys?revoked={key_id}")


def _keys(
    request: Request,
    visitor: Any,
    *,
    issued: dict[str, Any] | None,
    revoked: str | None,
    status: int = 200,
) -> Response:
    with web.shown_as_page():
        keys = reads.api_keys(web.services_of(request), visitor.tenant)
    if revoked is not None and not any(k.key_id == revoked for k in keys):
        revoked = None  # only ever echo a key id the tenant has
    return web.show(
        request,
        visitor,
        "keys",
        keys=keys,
        issued=issued,
        revoked=revoked,
        roles=TENANT_ROLES,
        status=status,
    )


@router.get("/refusals")
def refusals_page(request: Request, visitor: web.VisitorDep) -> Response:
    with web.acting(request, visitor, web.READERS) as services:
        counts = routes_admin.refusals(visitor.principal, services)["refusals"]
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return web.show(
        request,
        visitor,
        "refusals",
        rows=rows,
        total=sum(counts.values()),
    )


@router.get("/policy")
def policy_page(request: Request, visitor: web.VisitorDep) -> Response:
    web.require(request, visitor, web.READERS)
    saved = request.query_params.get("saved") == "1"
    return _policy(request, visitor, saved=saved)


@router.post("/policy")
def set_policy(request: Request, visitor: web.VisitorDep, form: web.CheckedForm) -> Response:
    """Set the PII actions and TTL defaults through the REST route's own function."""
    web.require(request, visitor, web.ADMINS)
    pii: dict[str, str] = {}
    for pii_type in _PII_TYPES:
        action = form.get(f"pii_{pii_type}", "redact")
        if action not in _PII_ACTIONS:
            raise web.ConsoleError(422, f"pii.{pii_type}: must be one of {', '.join(_PII_ACTIONS)}")
        pii[pii_type] = action
    ttl: dict[str, float | None] = {}
    for note_type in NOTE_TYPES:
        raw = web.field(form, f"ttl_{note_type}")
        try:
            ttl[note_type] = None if raw is None else float(raw)
        except ValueError:
            raise web.ConsoleError(422, f"ttl_days.{note_type}: not a number of days") from None
    with web.shown_as_page():
        body = ScreenPolicyIn(
            pii=pii,  # type: ignore[arg-type]
            allow_suspicious_shared=form.get("allow_suspicious_shared") == "on",
            ttl_days=TtlDefaults(**ttl),
        )
        routes_admin.set_policy(body, visitor.principal, web.services_of(request))
    return web.redirect("/policy?saved=1")


def _policy(request: Request, visitor: Any, *, saved: bool) -> Response:
    with web.shown_as_page():
        policy = routes_admin.get_policy(visitor.principal, web.services_of(request))
    return web.show(
        request,
        visitor,
        "policy",
        policy=policy,
        pii_types=_PII_TYPES,
        pii_actions=_PII_ACTIONS,
        note_types=NOTE_TYPES,
        llm_setting=web.services_of(request).settings.llm,
        saved=saved,
    )

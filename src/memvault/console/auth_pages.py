"""Sign-in, sign-out, the landing redirect and the style sheet."""

from __future__ import annotations

from importlib.resources import files

from fastapi import APIRouter, Request
from fastapi.responses import Response

from memvault.console.web import (
    CONSOLE_ROLES,
    PREFIX,
    SECURITY_HEADERS,
    CheckedForm,
    SignInRequired,
    console_of,
    current_visitor,
    drop_session,
    redirect,
    render,
    services_of,
    session_of,
    set_session,
)
from memvault.errors import AuthenticationError
from memvault.tenancy.principals import split_token

router = APIRouter(prefix=PREFIX, include_in_schema=False)

_CSS = files("memvault.console").joinpath("static/console.css").read_bytes()


@router.get("/static/console.css")
def stylesheet() -> Response:
    headers = {**SECURITY_HEADERS, "Cache-Control": "public, max-age=3600"}
    return Response(_CSS, media_type="text/css", headers=headers)


@router.get("")
@router.get("/")
def landing(request: Request) -> Response:
    """Operators land on Tenants, tenant keys on Users; signed-out visitors on the sign-in page."""
    try:
        visitor = current_visitor(request)
    except SignInRequired:
        return redirect("/login")
    return redirect("/tenants" if visitor.principal.role == "operator" else "/users")


@router.get("/login")
def login_page(request: Request) -> Response:
    session = session_of(request)
    if session is None:
        session = console_of(request).sealer.new(None)
    response = render(request, "login.html", session=session, error=None)
    set_session(request, response, session)
    return response


@router.post("/login")
def login(request: Request, form: CheckedForm) -> Response:
    """Check the key now (a key that does not authenticate never becomes a session)."""
    services = services_of(request)
    token = form.get("api_key", "").strip()
    try:
        principal = services.keys.from_authorization(
            f"Bearer {token}", request.app.state.operator_key
        )
    except AuthenticationError:
        _audit_failed_sign_in(request, token)
        return _refused(request, 401, "invalid or revoked API key")
    if principal.role not in CONSOLE_ROLES:
        return _refused(request, 403, "the console needs a tenant-admin, auditor or operator key")
    response = redirect("/")
    set_session(request, response, console_of(request).sealer.new(token))
    return response


@router.post("/logout")
def logout(request: Request, _form: CheckedForm) -> Response:
    """End the session on the server and in the browser."""
    session = session_of(request)
    if session is not None:
        console_of(request).sealer.end(session)
    response = redirect("/login")
    drop_session(request, response)
    return response


def _refused(request: Request, status: int, message: str) -> Response:
    fresh = console_of(request).sealer.new(None)
    response = render(request, "login.html", session=fresh, error=message, status=status)
    set_session(request, response, fresh)
    return response


def _audit_failed_sign_in(request: Request, token: str) -> None:
    """As the REST API does for a 401: summed per tenant and key id, never the secret."""
    try:
        tenant, key_id, _secret = split_token(token)
        services_of(request).audit.note_denied(tenant, "unauthorized", key_id)
    except Exception:  # a malformed token or an unknown tenant: left to the metrics
        return

"""The console's plumbing: templates, the signed-in visitor, CSRF-checked forms, error pages.

Every page is rendered by `render`, which sets the headers that keep it to itself: a strict
Content-Security-Policy (no script at all, styles and forms from this origin only), no framing,
no referrer, no caching. Every POST goes through `CheckedForm`: the body must be a URL-encoded
form from this origin whose CSRF token matches the visitor's own session.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import parse_qs, urlsplit

from fastapi import Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, PackageLoader, StrictUndefined
from pydantic import ValidationError

from memvault.api.deps import check_role
from memvault.api.errors import correlation_id, describe_validation_errors, status_for
from memvault.console.session import COOKIE, Session, SessionSealer, SessionStore
from memvault.errors import AuthenticationError, Forbidden, VaultError
from memvault.runtime.factory import Services
from memvault.tenancy.principals import Principal

log = logging.getLogger("memvault.console")

PREFIX = "/console"
MAX_FORM_FIELDS = 64
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
READERS = ("tenant_admin", "auditor")
"""The roles of `AuditReaderDep`: they read the tenant pages."""
ADMINS = ("tenant_admin",)
"""The role of `AdminDep`: it acts (keys, erasures, policy)."""
OPERATORS = ("operator",)
CONSOLE_ROLES = ("tenant_admin", "auditor", "operator")


@dataclass
class Console:
    """What the console keeps on `app.state.console`."""

    sealer: SessionSealer
    templates: Environment


def make_console(store: SessionStore | None = None) -> Console:
    """The console's templates and sessions (`store`: where sessions live; default this process)."""
    env = Environment(
        loader=PackageLoader("memvault.console", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return Console(SessionSealer(store), env)


def console_of(request: Request) -> Console:
    console: Console = request.app.state.console
    return console


def services_of(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


class ConsoleError(Exception):
    """A page-level failure shown as an HTML error page. `message` never quotes a value."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class SignInRequired(Exception):
    """No valid session: the visitor is sent to the sign-in page (and the cookie dropped)."""


@dataclass(frozen=True)
class Visitor:
    """A signed-in visitor: who the sealed key authenticates as now, and the session."""

    principal: Principal
    session: Session

    @property
    def tenant(self) -> str:
        tenant = self.principal.tenant
        if tenant is None:
            raise ConsoleError(403, "this page is for tenant keys; the operator has Tenants")
        return tenant

    @property
    def is_admin(self) -> bool:
        return self.principal.role in ADMINS


def session_of(request: Request) -> Session | None:
    return console_of(request).sealer.open(request.cookies.get(COOKIE))


def current_visitor(request: Request) -> Visitor:
    """The visitor, re-authenticated on every request (a revoked key ends its session at once)."""
    session = session_of(request)
    if session is None or session.api_key is None:
        raise SignInRequired
    try:
        principal = services_of(request).keys.from_authorization(
            f"Bearer {session.api_key}", request.app.state.operator_key
        )
    except AuthenticationError:
        raise SignInRequired from None
    if principal.role not in CONSOLE_ROLES:
        raise SignInRequired
    return Visitor(principal, session)


VisitorDep = Annotated[Visitor, Depends(current_visitor)]


def require(request: Request, visitor: Visitor, roles: tuple[str, ...]) -> None:
    """The REST API's own role rule (`check_role`); a refusal is audited as it is there."""
    try:
        check_role(visitor.principal, roles)
    except Forbidden as exc:
        tenant, key_id = visitor.principal.tenant, visitor.principal.key_id
        if tenant is not None:
            try:
                services_of(request).audit.note_denied(tenant, "forbidden", key_id)
            except Exception as error:  # the audit must never change the answer
                log.warning("audit of a refused console request failed (%s)", type(error).__name__)
        raise ConsoleError(403, exc.message) from None


def same_origin(request: Request) -> bool:
    """A browser's form POST carries `Origin`; when present it must be this server's.

    Pages send `Referrer-Policy: same-origin`: under `no-referrer` a browser sends
    `Origin: null` even for its own forms, which this check refuses like any foreign origin.
    """
    origin = request.headers.get("origin")
    if origin is None:
        return True
    parts = urlsplit(origin)
    return parts.scheme == request.url.scheme and parts.netloc == request.url.netloc


async def read_form(request: Request) -> dict[str, str]:
    """The URL-encoded form of a POST (first value of each field)."""
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media != "application/x-www-form-urlencoded":
        raise ConsoleError(415, "console forms are application/x-www-form-urlencoded")
    body = (await request.body()).decode("utf-8", errors="replace")
    try:
        fields = parse_qs(body, keep_blank_values=True, max_num_fields=MAX_FORM_FIELDS)
    except ValueError:
        raise ConsoleError(400, "too many form fields") from None
    return {name: values[0] for name, values in fields.items()}


async def checked_form(request: Request) -> dict[str, str]:
    """A form whose CSRF token matches the visitor's session (signed in or not)."""
    form = await read_form(request)
    session = session_of(request)
    if not same_origin(request):
        raise ConsoleError(403, "cross-origin form refused")
    if session is None or not session.csrf_matches(form.get("csrf")):
        raise ConsoleError(403, "the form's CSRF token is missing or does not match the session")
    return form


CheckedForm = Annotated[dict[str, str], Depends(checked_form)]


def field(form: dict[str, str], name: str) -> str | None:
    """A form field, stripped; None when absent or blank."""
    value = form.get(name, "").strip()
    return value or None


@contextmanager
def shown_as_page() -> Iterator[None]:
    """Turn the service's errors into console error pages (messages name fields, never values)."""
    try:
        yield
    except ValidationError as exc:
        raise ConsoleError(422, describe_validation_errors(exc.errors())) from None
    except VaultError as exc:
        status = status_for(exc)
        if status >= 500:
            cid = correlation_id()
            log.error("%s (%s) correlation_id=%s", exc.code, type(exc).__name__, cid)
            raise ConsoleError(status, f"{exc.code} (correlation id {cid})") from None
        raise ConsoleError(status, exc.message) from None


@contextmanager
def acting(request: Request, visitor: Visitor, roles: tuple[str, ...]) -> Iterator[Services]:
    """A console handler's work: `require` one of `roles`, then run the block with the service's
    errors shown as pages (`shown_as_page`); the block gets the app's services."""
    require(request, visitor, roles)
    with shown_as_page():
        yield services_of(request)


def secure_cookie(request: Request) -> bool:
    return request.url.scheme == "https"


def set_session(request: Request, response: Response, session: Session) -> None:
    sealer = console_of(request).sealer
    response.set_cookie(
        COOKIE,
        sealer.seal(session),
        max_age=int(sealer.lifetime),
        path=PREFIX,
        httponly=True,
        samesite="strict",
        secure=secure_cookie(request),
    )


def drop_session(request: Request, response: Response) -> None:
    response.delete_cookie(
        COOKIE, path=PREFIX, httponly=True, samesite="strict", secure=secure_cookie(request)
    )


def render(
    request: Request,
    template: str,
    *,
    visitor: Visitor | None = None,
    session: Session | None = None,
    status: int = 200,
    **context: Any,
) -> HTMLResponse:
    """Render a page with its security headers; `csrf` is the token of the page's forms."""
    current = visitor.session if visitor is not None else session
    html = (
        console_of(request)
        .templates.get_template(template)
        .render(
            prefix=PREFIX,
            me=None if visitor is None else visitor.principal,
            is_admin=visitor is not None and visitor.is_admin,
            csrf="" if current is None else current.csrf,
            **context,
        )
    )
    return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)


def show(
    request: Request,
    visitor: Visitor,
    page: str,
    template: str | None = None,
    *,
    status: int = 200,
    **context: Any,
) -> HTMLResponse:
    """A signed-in page: `template` (by default `<page>.html`) under the navigation's `page`
    tab, rendered for `visitor` (the header every console page shares)."""
    return render(
        request, template or f"{page}.html", visitor=visitor, page=page, status=status, **context
    )


def redirect(path: str) -> RedirectResponse:
    """A 303 See Other to a console path (after a POST, the browser GETs it)."""
    return RedirectResponse(PREFIX + path, status_code=303, headers=SECURITY_HEADERS)

"""The admin console at `/console`: server-rendered pages over the same services as the REST API.

`install_console(app)` mounts it on an app built by `memvault.api.app.create_app`. Pages are
Jinja2 templates shipped in this package, with one style sheet and no script and no CDN. A
visitor signs in with a tenant-admin, auditor or operator key; the session lives in the
database (`console_sessions`, shared by every worker), sealed under a token that only its
HttpOnly, SameSite=Strict cookie carries (`memvault.console.session`); every form carries a
CSRF token bound to that session. docs/console.md describes the pages and the session.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from memvault.console import (
    alert_pages,
    auth_pages,
    compliance_pages,
    operator_pages,
    tenant_pages,
)
from memvault.console.session_store import DatabaseSessionStore
from memvault.console.web import (
    PREFIX,
    SECURITY_HEADERS,
    ConsoleError,
    SignInRequired,
    drop_session,
    make_console,
)

__all__ = ["install_console"]


def install_console(app: FastAPI) -> None:
    """Add the console's routes, its sessions (in the app's database) and its error pages."""
    app.state.console = console = make_console(DatabaseSessionStore(app.state.services.db))
    for module in (auth_pages, tenant_pages, compliance_pages, alert_pages, operator_pages):
        app.include_router(module.router)

    @app.exception_handler(SignInRequired)
    async def sign_in(request: Request, _exc: SignInRequired) -> Response:
        response = RedirectResponse(f"{PREFIX}/login", status_code=303, headers=SECURITY_HEADERS)
        drop_session(request, response)
        return response

    @app.exception_handler(ConsoleError)
    async def error_page(_request: Request, exc: ConsoleError) -> Response:
        html = console.templates.get_template("error.html").render(
            prefix=PREFIX, me=None, is_admin=False, csrf="", status=exc.status, message=exc.message
        )
        return HTMLResponse(html, status_code=exc.status, headers=SECURITY_HEADERS)

"""The one table that maps memvault errors to HTTP statuses, and the error JSON shape.

Every error leaves as `{"error": {"code", "message"}}`, bounded in size, with no request value in
it. Unhandled exceptions are turned into a JSON 500 by `memvault.api.boundary.RequestGuard`.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from typing import Any

from anyio import to_thread
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from memvault.errors import (
    AuthenticationError,
    Conflict,
    DecryptionError,
    Forbidden,
    InvalidRequest,
    KeyNotFound,
    NotFound,
    PermissionDenied,
    ScopeViolation,
    ScreenRefused,
    SessionUntrusted,
    VaultError,
)

log = logging.getLogger("memvault.api")

STATUS_BY_ERROR: dict[type[VaultError], int] = {
    InvalidRequest: 422,
    ScreenRefused: 422,
    AuthenticationError: 401,
    Forbidden: 403,
    PermissionDenied: 403,
    NotFound: 404,
    SessionUntrusted: 423,
    Conflict: 409,
    ScopeViolation: 500,
    DecryptionError: 500,
    KeyNotFound: 500,
}

CODE_BY_STATUS: dict[int, str] = {
    400: "malformed_body",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "body_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    423: "session_untrusted",
    429: "too_many_requests",
    500: "internal_error",
    503: "unavailable",
}

MAX_PROBLEMS = 10
"""At most this many validation problems are listed; the rest are counted."""
MAX_MESSAGE_CHARS = 1_000
"""An error message never exceeds this many characters."""
MAX_LOC_PART_CHARS = 64
"""A field name in a message (it may be an unknown field the client made up) is cut to this."""

# Constraint values from the schema, never from the request: safe to show.
_SAFE_CTX_KEYS = ("ge", "gt", "le", "lt", "min_length", "max_length", "expected", "pattern")


def error_body(code: str, message: str) -> dict[str, dict[str, str]]:
    return {"error": {"code": code, "message": bounded(message)}}


def bounded(message: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    return message if len(message) <= limit else message[: limit - 1] + "…"


def correlation_id() -> str:
    return uuid.uuid4().hex[:16]


def status_for(exc: VaultError) -> int:
    for cls in type(exc).__mro__:
        if cls in STATUS_BY_ERROR:
            return STATUS_BY_ERROR[cls]
    return 500


def _loc_part(part: Any) -> str:
    text = str(part)
    text = "".join(c if c.isprintable() and c.isascii() else "?" for c in text[:MAX_LOC_PART_CHARS])
    return text + ("…" if len(str(part)) > MAX_LOC_PART_CHARS else "")


def describe_validation_errors(errors: Sequence[Any]) -> str:
    """`field: rule` for the first few problems. Names fields and rules, never values."""
    problems: list[str] = []
    for err in errors[:MAX_PROBLEMS]:
        loc = ".".join(_loc_part(p) for p in err.get("loc", ()) if p != "body")
        rule = str(err.get("type", "invalid"))
        ctx = err.get("ctx") or {}
        limits = ", ".join(f"{k}={ctx[k]}" for k in _SAFE_CTX_KEYS if k in ctx)
        problems.append(f"{loc or 'body'}: {rule}" + (f" ({limits})" if limits else ""))
    more = len(errors) - MAX_PROBLEMS
    message = "; ".join(problems)
    if more > 0:
        message += f"; and {more} more problems"
    return bounded(message)


def audit_denial(request: Request, exc: VaultError, status: int) -> None:
    """Audit a refused request (ids and counts only; never raises).

    401 and 403 are summed per tenant into one event per burst window (`AuditLog.note_denied`);
    a 401 whose key id is not a key of the tenant its token names is left to the metrics. A
    `ScopeViolation` is one event per occurrence.
    """
    from memvault.tenancy.principals import split_token

    services = getattr(request.app.state, "services", None)
    if services is None:
        return
    header = request.headers.get("authorization", "")
    try:
        if status == 401:
            scheme, _, token = header.partition(" ")
            if scheme.lower() != "bearer":
                return
            tenant, key_id, _secret = split_token(token.strip())
            services.audit.note_denied(tenant, "unauthorized", key_id)
            return
        caller = services.keys.from_authorization(header, request.app.state.operator_key)
        if caller.tenant is None:
            return
        if isinstance(exc, ScopeViolation):
            subject = {"user_id": caller.user, "agent_id": caller.agent}
            services.audit.record(
                caller.tenant, caller.key_id, "security.scope_violation", subject=subject
            )
        else:
            services.audit.note_denied(caller.tenant, "forbidden", caller.key_id)
    except Exception as error:  # the audit must never change the answer
        log.warning("audit of a refused request failed (%s)", type(error).__name__)


def install_error_handlers(app: FastAPI) -> None:
    """Every error leaves as `{"error": {"code", "message"}}`; no request value is echoed."""

    @app.exception_handler(VaultError)
    async def vault_error(_request: Request, exc: VaultError) -> JSONResponse:
        status = status_for(exc)
        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
        if status in (401, 403) or isinstance(exc, ScopeViolation):
            await to_thread.run_sync(audit_denial, _request, exc, status)
        if status >= 500:
            # A loud, logged failure; the client gets the code and a correlation id, no detail
            # (a message from a lower layer could carry a server path).
            cid = correlation_id()
            level = logging.CRITICAL if isinstance(exc, ScopeViolation) else logging.ERROR
            log.log(level, "%s (%s) correlation_id=%s", exc.code, type(exc).__name__, cid)
            body = error_body(exc.code, f"{exc.code} (correlation id {cid})")
            return JSONResponse(body, status, headers={"X-Correlation-ID": cid})
        return JSONResponse(error_body(exc.code, exc.message), status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        if any(e.get("type") == "json_invalid" for e in errors):
            return JSONResponse(error_body("malformed_json", "request body is not valid JSON"), 400)
        return JSONResponse(error_body("invalid_request", describe_validation_errors(errors)), 422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        status = exc.status_code
        code = CODE_BY_STATUS.get(status, "http_error")
        # Keep the headers Starlette sets (`Allow` on a 405, for one).
        return JSONResponse(error_body(code, str(exc.detail)), status, headers=exc.headers)

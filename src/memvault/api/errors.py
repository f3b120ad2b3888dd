"""The one table that maps memvault errors to HTTP statuses, and the error JSON shape."""

from __future__ import annotations

import logging

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
    Conflict: 409,
    ScopeViolation: 500,
    DecryptionError: 500,
    KeyNotFound: 500,
}


def error_body(code: str, message: str) -> dict[str, dict[str, str]]:
    return {"error": {"code": code, "message": message}}


def status_for(exc: VaultError) -> int:
    for cls in type(exc).__mro__:
        if cls in STATUS_BY_ERROR:
            return STATUS_BY_ERROR[cls]
    return 500


def install_error_handlers(app: FastAPI) -> None:
    """Every error leaves as `{"error": {"code", "message"}}`; no request value is echoed."""

    @app.exception_handler(VaultError)
    async def vault_error(_request: Request, exc: VaultError) -> JSONResponse:
        status = status_for(exc)
        if isinstance(exc, ScopeViolation):
            log.critical("scope violation: %s", exc.code)  # an audit alert; never silent
        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
        return JSONResponse(error_body(exc.code, exc.message), status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
        # Name the fields and the rule, never the submitted value (it may hold a secret).
        problems = []
        for err in exc.errors():
            loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
            problems.append(f"{loc or 'body'}: {err.get('type', 'invalid')}")
        return JSONResponse(error_body("invalid_request", "; ".join(problems)), 422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return JSONResponse(error_body(code, str(exc.detail)), exc.status_code)

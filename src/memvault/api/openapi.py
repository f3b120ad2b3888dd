"""The OpenAPI document as the contract, and the offline `/docs`.

FastAPI's generated document is post-processed here, in one place, from what each route really
does: the bearer scheme on every authenticated operation, every error status it can answer with
the one `ErrorBody` schema (FastAPI's `HTTPValidationError` `{detail: [...]}` is removed), the
real content types, and the id patterns of path parameters. New routes are covered by the same
rules without touching this file, unless they need an entry in one of the tables below.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.dependencies.models import Dependant
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse
from fastapi.routing import APIRoute, iter_route_contexts
from starlette.staticfiles import StaticFiles

from memvault.api.boundary import MAX_BODY_BYTES, MAX_JSON_DEPTH
from memvault.api.deps import get_principal
from memvault.api.errors import MAX_PROBLEMS
from memvault.api.schemas import ID_PATTERN, KEY_ID_PATTERN, UUID_PATTERN, ErrorBody

SECURITY_SCHEME = "bearerAuth"
ERROR_REF = {"$ref": "#/components/schemas/ErrorBody"}
METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
NDJSON = "application/x-ndjson"

ERROR_DESCRIPTIONS: dict[int, str] = {
    400: "`malformed_json` (the body is not JSON) or `body_too_deep` (nested deeper than "
    f"{MAX_JSON_DEPTH} levels).",
    401: "`unauthorized`: a missing, malformed, unknown or revoked API key.",
    403: "`forbidden` (the key's role may not call this endpoint) or `permission_denied` (the "
    "caller may read the memory but is not one of its writers).",
    404: "`not_found`: unknown id, or outside the caller's readable scopes (never 403).",
    409: "`conflict` (the resource exists), `scope_erasing` (the scope is being erased), "
    "`idempotency_key_reused` or `idempotency_key_in_progress`.",
    413: f"`body_too_large`: the request body exceeds {MAX_BODY_BYTES} bytes.",
    422: "`invalid_request` (a field, query or path parameter outside its documented schema, an "
    "unknown field or query parameter) or a write-screen refusal such as `credential_refused`, "
    f"`pii_refused`, `too_short`. At most {MAX_PROBLEMS} problems are listed.",
    423: "`session_untrusted`: the session named in `X-Session-Id` is marked untrusted; no "
    "memory is returned.",
    429: "`too_many_requests`.",
    500: "`internal_error` (with a correlation id, also logged; no detail), `scope_violation`, "
    "`decryption_failed`.",
    503: "`unavailable`: the service is not ready.",
}

PATH_PARAM_PATTERNS: dict[str, tuple[str, str]] = {
    "note_id": (UUID_PATTERN, "A note id (UUID). Anything else is 404."),
    "key_id": (KEY_ID_PATTERN, "An API key id (16 hex characters). Anything else is 404."),
    "tenant_id": (ID_PATTERN, "A tenant id, matched in full."),
    "user_id": (ID_PATTERN, "A user id, matched in full."),
    "agent_id": (ID_PATTERN, "An agent id, matched in full."),
    "session_id": (ID_PATTERN, "A session id (id grammar). Anything else is 422."),
}

# (method, path) -> the media type of the 200 response, where it is not JSON.
CONTENT_TYPES: dict[tuple[str, str], str] = {
    ("get", "/metrics"): METRICS_CONTENT_TYPE,
    ("get", "/v1/admin/audit"): NDJSON,
    ("get", "/v1/admin/audit/export"): NDJSON,
    ("get", "/v1/admin/export"): NDJSON,
    ("get", "/v1/quality/review"): "text/markdown; charset=utf-8",
}

# (method, path) -> statuses beyond the ones derived from the route's shape.
EXTRA_STATUSES: dict[tuple[str, str], set[int]] = {
    ("get", "/v1/admin/export"): {409},  # `scope_erasing`: the user is being erased
    ("get", "/v1/quality/review"): {409},  # `conflict`: A-MEM is off; `scope_erasing`
    # `session_untrusted`: the read names (`X-Session-Id`) a session marked untrusted
    ("post", "/v1/memories/search"): {423},
    ("get", "/v1/memories"): {423},
    ("get", "/v1/memories/{note_id}"): {423},
    ("get", "/v1/memories/{note_id}/links"): {423},
}

TOKEN_ONLY: set[tuple[str, str]] = {("get", "/metrics")}
"""Operations that take a bearer credential that is no API key (the operator key or the metrics
token): documented with the bearer scheme and 401, and never 403."""

IDEMPOTENT_WRITE_METHODS = {"post", "patch", "delete"}
SCOPED_PREFIXES = ("/v1/memories", "/v1/dialogues", "/v1/consolidate", "/v1/quality")
"""Operations that run inside a (tenant, user) scope: refused with 409 while it is erased."""

IDEMPOTENCY_KEY_PARAMETER: dict[str, Any] = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "description": "Retry-safe writes: the same key with the same request (method, path, "
    "query, body and `X-Session-Id`) replays the first response (with `Idempotent-Replayed: "
    "true`) for 24 h; with another request it is 409. "
    "1-255 printable ASCII characters.",
    "schema": {"type": "string", "pattern": "^[!-~]([ -~]{0,253}[!-~])?$"},
}


def _dependants(dependant: Dependant) -> Iterator[Dependant]:
    yield dependant
    for sub in dependant.dependencies:
        yield from _dependants(sub)


def is_authenticated(route: Any) -> bool:
    """True when the route resolves the caller from the bearer key."""
    return any(d.call is get_principal for d in _dependants(route.dependant))


def error_statuses(route: Any, method: str) -> set[int]:
    """The error statuses a route can answer with, from its shape and the tables above."""
    dependant = route.dependant
    statuses = {500}
    if (method, route.path_format) in TOKEN_ONLY:
        statuses.add(401)
    authenticated = is_authenticated(route)
    has_params = bool(
        dependant.query_params or dependant.path_params or dependant.body_params
    ) or any(d.query_params or d.body_params for d in _dependants(dependant))
    if authenticated:
        statuses |= {401, 403, 422}  # 422: unknown query parameters are refused everywhere
    if has_params:
        statuses.add(422)
    if route.body_field is not None:
        statuses |= {400, 413}
    if dependant.path_params:
        statuses.add(404)
    if authenticated and (
        method in IDEMPOTENT_WRITE_METHODS or route.path_format.startswith(SCOPED_PREFIXES)
    ):
        statuses.add(409)  # `Idempotency-Key` conflicts; `scope_erasing` on a scope being erased
    return statuses | EXTRA_STATUSES.get((method, route.path_format), set())


def _error_response(status: int) -> dict[str, Any]:
    response: dict[str, Any] = {
        "description": ERROR_DESCRIPTIONS.get(status, "An error."),
        "content": {"application/json": {"schema": ERROR_REF}},
    }
    if status == 401:
        response["headers"] = {
            "WWW-Authenticate": {"schema": {"type": "string"}, "description": "`Bearer`"}
        }
    if status == 500:
        response["headers"] = {
            "X-Correlation-ID": {
                "schema": {"type": "string"},
                "description": "The id under which the failure was logged.",
            }
        }
    return response


def _error_schemas() -> dict[str, Any]:
    schema = ErrorBody.model_json_schema(ref_template="#/components/schemas/{model}")
    defs = schema.pop("$defs", {})
    return {"ErrorBody": schema, **defs}


def _routes(app: FastAPI) -> Iterator[Any]:
    """Every documented API route, as a route or a `RouteContext` (an included router's route,
    with the router's prefix and dependencies applied; it has the attributes of an `APIRoute`)."""
    for context in iter_route_contexts(app.routes):
        if isinstance(context.original_route, APIRoute) and context.include_in_schema:
            yield context


def build_contract(app: FastAPI) -> dict[str, Any]:
    schema = get_openapi(
        title=app.title,
        version=app.version,
        summary=app.summary,
        description=app.description,
        routes=app.routes,
        tags=app.openapi_tags,
        servers=app.servers,
    )
    components = schema.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    schemas.update(_error_schemas())
    components["securitySchemes"] = {
        SECURITY_SCHEME: {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key: `Authorization: Bearer <api key>`. The key fixes the "
            "principal (tenant, user, agent, role).",
        }
    }
    idempotency = getattr(app.state, "idempotency", None) is not None
    for route in _routes(app):
        path = route.path_format
        for method in sorted(m.lower() for m in route.methods or ()):
            operation = schema["paths"].get(path, {}).get(method)
            if operation is None:
                continue
            _shape_operation(route, method, operation, idempotency=idempotency)
    return schema


def _shape_operation(
    route: Any, method: str, operation: dict[str, Any], *, idempotency: bool
) -> None:
    path = route.path_format
    responses: dict[str, Any] = operation.setdefault("responses", {})
    if (method, path) in TOKEN_ONLY:
        operation["security"] = [{SECURITY_SCHEME: []}]
    elif is_authenticated(route):
        operation["security"] = [{SECURITY_SCHEME: []}]
        if idempotency and method in IDEMPOTENT_WRITE_METHODS:
            operation.setdefault("parameters", []).append(dict(IDEMPOTENCY_KEY_PARAMETER))
    else:
        operation["security"] = []
    for documented in [s for s in responses if s.isdigit() and int(s) >= 400]:
        del responses[documented]  # FastAPI's 422 HTTPValidationError, among others
    for code in sorted(error_statuses(route, method)):
        responses[str(code)] = _error_response(code)
    media_type = CONTENT_TYPES.get((method, path))
    if media_type is not None:
        for status, response in responses.items():
            if status.startswith("2"):
                response["content"] = {media_type: {"schema": {"type": "string"}}}
    for status, response in responses.items():
        if status == "204":
            response.pop("content", None)
    for param in operation.get("parameters", ()):
        grammar = PATH_PARAM_PATTERNS.get(param.get("name", ""))
        if param.get("in") == "path" and grammar is not None:
            pattern, description = grammar
            param["schema"] = {**param.get("schema", {}), "type": "string", "pattern": pattern}
            param.setdefault("description", description)


DOCS_FRAME_HEADERS = {
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
}
"""`/docs` may not be framed (clickjacking, with a key in `persistAuthorization`), as the console
may not; its CSP says only that, since Swagger UI runs an inline script."""


def install_openapi(app: FastAPI) -> None:
    """Serve the contract at `/openapi.json` and Swagger UI at `/docs`, with no CDN."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = build_contract(app)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    _install_docs(app)


def _install_docs(app: FastAPI) -> None:
    from swagger_ui_bundle import swagger_ui_path  # ships Swagger UI 5 (OpenAPI 3.1)

    app.mount("/docs/assets", StaticFiles(directory=str(swagger_ui_path)), name="swagger-ui")

    @app.get("/docs", include_in_schema=False)
    def docs(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "").rstrip("/")
        page = get_swagger_ui_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{app.title} API",
            swagger_js_url=f"{root}/docs/assets/swagger-ui-bundle.js",
            swagger_css_url=f"{root}/docs/assets/swagger-ui.css",
            swagger_favicon_url=f"{root}/docs/assets/favicon-32x32.png",
            swagger_ui_parameters={"validatorUrl": None, "persistAuthorization": True},
        )
        page.headers.update(DOCS_FRAME_HEADERS)
        return page

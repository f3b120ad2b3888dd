"""The FastAPI app factory. No module-level settings or engines: tests build their own apps."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from anyio import to_thread
from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CollectorRegistry, Counter, generate_latest
from starlette.types import Scope

from memvault import __version__
from memvault.api import (
    routes_admin,
    routes_amem,
    routes_audit,
    routes_batch,
    routes_dsar,
    routes_erasure,
    routes_keys,
    routes_memories,
    routes_operator,
    routes_sessions,
    routes_webhooks,
)
from memvault.api.boundary import install_guard
from memvault.api.errors import error_body, install_error_handlers
from memvault.api.idempotency import install_idempotency
from memvault.api.lanes import open_read_lane
from memvault.api.metrics_auth import bearer_matches, metrics_credentials
from memvault.api.openapi import METRICS_CONTENT_TYPE, install_openapi
from memvault.compliance.wiring import install as install_compliance
from memvault.console import install_console
from memvault.observability import ProcessMetrics, install_request_observer
from memvault.runtime.factory import Services
from memvault.vault.untrusted import UntrustedSessions

if TYPE_CHECKING:
    from fastapi.telemetry import TelemetryConfig


FRAMEWORK_TELEMETRY_OFF: TelemetryConfig = {
    "tracing": False,
    "metrics": False,
    "logs": False,
    "operation_spans": False,
}
"""FastAPI's native telemetry, switched off (older FastAPI ignores the unknown argument)."""


def create_app(services: Services, *, operator_key: str | None = None) -> FastAPI:
    """Build the API over already-open services. The caller owns `services` unless told below.

    `operator_key` enables the operator endpoints; without it they always answer 401.
    On startup the app reconciles what a crash left (before it serves any request, so
    `/healthz` answers only once the data is repaired) and starts periodic maintenance.
    """

    compliance = install_compliance(services)
    if services.settings.amem:
        from memvault.amem.wiring import install as install_amem

        install_amem(services)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        open_read_lane(services.settings.read_threads)
        await to_thread.run_sync(services.start)
        await to_thread.run_sync(compliance.resume)
        try:
            yield
        finally:
            if services.maintenance is not None:
                await to_thread.run_sync(services.maintenance.stop)

    app = FastAPI(
        title="memvault",
        version=__version__,
        description=(
            "Multi-tenant, encrypted, long-term memory for AI agents. Every error is "
            '`{"error": {"code", "message"}}`; messages name fields and detectors, never values.'
        ),
        lifespan=lifespan,
        docs_url=None,  # served offline by install_openapi
        redoc_url=None,  # ReDoc loads from a CDN
        # FastAPI's own OpenTelemetry spans and exception logs would carry raw paths (note ids),
        # query strings and exception messages, and it checks the global providers on every
        # request. memvault's spans (observability/_tracing.py) hold names and numbers only.
        telemetry=FRAMEWORK_TELEMETRY_OFF,
    )
    app.state.services = services
    app.state.compliance = compliance
    app.state.operator_key = operator_key
    app.state.untrusted = UntrustedSessions(services.db, services.keyring, services.gate)
    registry = CollectorRegistry()
    requests = Counter(
        "memvault_requests",
        "HTTP requests by route and status",
        ["route", "status"],
        registry=registry,
    )
    registry.register(ProcessMetrics())  # the vault's stage timings and counters, per process

    def count_request(scope: Scope, status: int) -> None:
        route = scope.get("route")
        requests.labels(getattr(route, "path", "unmatched"), str(status)).inc()

    install_error_handlers(app)
    app.include_router(routes_batch.router)
    app.include_router(routes_memories.router)
    app.include_router(routes_admin.router)
    app.include_router(routes_webhooks.router)
    app.include_router(routes_audit.router)
    app.include_router(routes_dsar.router)
    app.include_router(routes_operator.router)
    app.include_router(routes_keys.router)
    app.include_router(routes_erasure.router)
    app.include_router(routes_amem.router)
    app.include_router(routes_sessions.router)

    @app.get("/healthz", tags=["ops"])
    def healthz() -> dict[str, str]:
        return {"status": "ok", "version": __version__}

    scrape_tokens = metrics_credentials(services, operator_key)

    @app.get("/metrics", tags=["ops"])
    def metrics(request: Request) -> Response:
        """Prometheus text exposition format 0.0.4 (see docs/observability.md). Needs
        `Authorization: Bearer` with the operator key or the metrics token (`METRICS_TOKEN`):
        the counters name every tenant's routes and refusals."""
        if not bearer_matches(request.headers.get("authorization", ""), scrape_tokens):
            return JSONResponse(
                error_body("unauthorized", "/metrics needs the operator key or the metrics token"),
                401,
                headers={"WWW-Authenticate": "Bearer"},
            )
        return Response(generate_latest(registry), media_type=METRICS_CONTENT_TYPE)

    install_console(app)  # the admin console at /console (docs/console.md)
    install_idempotency(app)
    install_openapi(app)
    # The guard is the outermost middleware even if more (idempotency) is added after this line:
    # bad methods, oversized or over-deep bodies are refused first, and an exception anywhere
    # inside still leaves as a JSON 500 with a correlation id.
    install_guard(app, observe=count_request)
    # Outside even the guard: its 405/413/500 responses carry a request id and are timed.
    install_request_observer(app, registry)
    return app

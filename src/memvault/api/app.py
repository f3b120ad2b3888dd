"""The FastAPI app factory. No module-level settings or engines: tests build their own apps."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request, Response
from prometheus_client import CollectorRegistry, Counter, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from memvault import __version__
from memvault.api import routes_admin, routes_memories, routes_operator
from memvault.api.errors import install_error_handlers
from memvault.vault.factory import Services


def create_app(services: Services, *, operator_key: str | None = None) -> FastAPI:
    """Build the API over already-open services. The caller owns `services` unless told below.

    `operator_key` enables the operator endpoints; without it they always answer 401.
    """

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield

    app = FastAPI(
        title="memvault",
        version=__version__,
        description="Multi-tenant, encrypted, long-term memory for AI agents.",
        lifespan=lifespan,
    )
    app.state.services = services
    app.state.operator_key = operator_key
    registry = CollectorRegistry()
    requests = Counter(
        "memvault_requests",
        "HTTP requests by route and status",
        ["route", "status"],
        registry=registry,
    )

    @app.middleware("http")
    async def count_requests(request: Request, call_next):  # type: ignore[no-untyped-def]
        response = await call_next(request)
        route = request.scope.get("route")
        requests.labels(getattr(route, "path", "unmatched"), str(response.status_code)).inc()
        return response

    install_error_handlers(app)
    app.include_router(routes_memories.router)
    app.include_router(routes_admin.router)
    app.include_router(routes_operator.router)

    @app.get("/healthz", tags=["ops"])
    def healthz() -> dict[str, str]:
        return {"status": "ok", "version": __version__}

    @app.get("/metrics", tags=["ops"])
    def metrics() -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    return app

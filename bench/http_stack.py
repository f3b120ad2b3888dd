"""What the HTTP stack costs a search request, without the search: CPU per request, in process.

Builds the real app over real services (embedded default, A-MEM off) in a temporary data
directory, replaces `ScopedVault.search` by one that finds nothing, and sends `--requests`
`POST /v1/memories/search` requests one after another straight into the ASGI app (no socket,
no uvicorn): authentication, the guard, the idempotency and observer middleware, FastAPI's
dependencies and validation, the read lane's thread hop, the audit event, the response.
`--without` leaves parts out, to price each one; the process CPU per request is the figure
(sequential, so it is steady on a busy machine; compare variants as ratios).

Run: .venv/bin/python -m bench.http_stack [--requests 3000] [--without audit,observer,idempotency]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from unittest import mock

from fastapi.testclient import TestClient

PARTS = ("audit", "observer", "idempotency")
OPERATOR_KEY = "mvop_bench-operator-key-0123456789"


def stub(stack: contextlib.ExitStack, without: set[str]) -> None:
    """Patch, until `stack` closes: the search finds nothing, and the parts in `without` go."""
    import memvault.api.app as app_module
    import memvault.api.routes_memories as routes
    from memvault.vault.service import ScopedVault

    def leave_out(*args: Any, **kwargs: Any) -> None:
        return None

    def find_nothing(self: ScopedVault, *args: Any, **kwargs: Any) -> list[Any]:
        return []

    stack.enter_context(mock.patch.object(ScopedVault, "search", find_nothing))
    if "idempotency" in without:
        stack.enter_context(mock.patch.object(app_module, "install_idempotency", leave_out))
    if "observer" in without:
        stack.enter_context(mock.patch.object(app_module, "install_request_observer", leave_out))
    if "audit" in without:
        stack.enter_context(mock.patch.object(routes, "_audit", leave_out))


def build_app(root: Path) -> tuple[Any, Any, str]:
    """(app, services, an agent key) over fresh services in `root`."""
    import memvault.api.app as app_module
    from memvault.config import Settings
    from memvault.runtime.factory import open_services

    services = open_services(Settings(data_dir=root, amem=False))
    app = app_module.create_app(services, operator_key=OPERATOR_KEY)
    client = TestClient(app)
    created = client.post(
        "/v1/operator/tenants",
        json={"tenant_id": "bench"},
        headers={"Authorization": f"Bearer {OPERATOR_KEY}"},
    )
    admin = created.json()["api_key"]
    made = client.post(
        "/v1/admin/keys",
        json={"user_id": "u1", "agent_id": "a1", "role": "agent"},
        headers={"Authorization": f"Bearer {admin}"},
    )
    return app, services, str(made.json()["api_key"])


async def search_once(app: Any, key: str, body: bytes) -> int:
    """One search request through the ASGI app; its status."""
    path = "/v1/memories/search"
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"authorization", f"Bearer {key}".encode()),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
        "state": {},
    }
    delivered = False
    status = 0

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # the client never disconnects
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    await app(scope, receive, send)
    return status


async def measure(app: Any, key: str, requests: int) -> tuple[float, float]:
    """(CPU seconds, wall seconds) per request, after a warm-up."""
    body = json.dumps({"query": "where did alice go hiking last summer", "mode": "full"}).encode()
    async with app.router.lifespan_context(app):
        for _ in range(300):
            status = await search_once(app, key, body)
            if status != 200:
                raise SystemExit(f"the search answered {status}")
        cpu, wall = time.process_time(), time.perf_counter()
        for _ in range(requests):
            await search_once(app, key, body)
        return (time.process_time() - cpu) / requests, (time.perf_counter() - wall) / requests


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--without", default="", help=f"comma-separated, of {', '.join(PARTS)}")
    a = parser.parse_args(argv)
    without = {p for p in a.without.split(",") if p}
    if not without <= set(PARTS) or not 1 <= a.requests <= 1_000_000:
        raise SystemExit(f"--without takes {', '.join(PARTS)}; --requests 1-1000000")
    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="memvault-http-stack-"))
        stub(stack, without)
        app, services, key = build_app(Path(tmp) / "data")
        stack.callback(services.close)
        cpu, wall = asyncio.run(measure(app, key, a.requests))
    label = "without " + ", ".join(sorted(without)) if without else "everything"
    print(
        f"search request, vault stubbed, {label}: CPU {1e6 * cpu:.0f} µs per request,"
        f" wall {1e6 * wall:.0f} µs ({a.requests} requests)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

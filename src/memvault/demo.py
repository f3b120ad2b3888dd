"""`memvault demo`: two tenants, private vs shared notes, and an erase, over the real REST API."""

from __future__ import annotations

import secrets
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memvault.config import Settings

Echo = Callable[[str], None]


def run_demo(data_dir: Path | None, echo: Echo) -> None:
    """Run the walkthrough in `data_dir` (a fresh temporary folder when None)."""
    from fastapi.testclient import TestClient

    from memvault.api.app import create_app
    from memvault.vault.factory import open_services

    with tempfile.TemporaryDirectory(prefix="memvault-demo-") as tmp:
        root = data_dir or Path(tmp)
        operator_key = "mvop_" + secrets.token_urlsafe(24)
        echo(f"== memvault demo (data in {root}) ==")
        echo("loading the embedding model ...")
        services = open_services(Settings(data_dir=root))
        try:
            client = TestClient(create_app(services, operator_key=operator_key))
            _walkthrough(client, operator_key, echo)
        finally:
            services.close()


def _call(client: Any, method: str, path: str, key: str, **kw: Any) -> Any:
    response = client.request(method, path, headers={"Authorization": f"Bearer {key}"}, **kw)
    if response.status_code >= 400:
        return response.status_code, response.json()
    return response.status_code, (response.json() if response.content else None)


def _walkthrough(client: Any, operator_key: str, echo: Echo) -> None:
    keys: dict[str, str] = {}
    for tenant in ("acme", "globex"):
        _, admin = _call(
            client, "POST", "/v1/operator/tenants", operator_key, json={"tenant_id": tenant}
        )
        echo(f"operator created tenant {tenant!r}; tenant-admin key {admin['key_id']}")
        for agent in ("planner", "coder"):
            _, issued = _call(
                client,
                "POST",
                "/v1/admin/keys",
                admin["api_key"],
                json={"user_id": "alice", "agent_id": agent},
            )
            keys[f"{tenant}/{agent}"] = issued["api_key"]
        keys[f"{tenant}/admin"] = admin["api_key"]
    echo("issued agent keys for alice: acme/planner, acme/coder, globex/planner, globex/coder")

    echo("\n-- writes --")
    memories = [
        ("acme/planner", "Alice prefers morning meetings before ten", "private"),
        ("acme/planner", "Alice's team ships the billing service on Fridays", "shared"),
        ("globex/planner", "Alice prefers afternoon meetings after three", "private"),
    ]
    for who, text, visibility in memories:
        status, note = _call(
            client, "POST", "/v1/memories", keys[who], json={"text": text, "visibility": visibility}
        )
        echo(f"{who:15} {visibility:8} -> {status} id={note['id'][:8]}…")
    status, refused = _call(
        client,
        "POST",
        "/v1/memories",
        keys["acme/planner"],
        json={"text": "the deploy password: " + "Zq8" + "vT2mW9xLp"},
    )
    echo(
        f"acme/planner    a password -> {status} {refused['error']['code']} "
        f"({refused['error']['message']})"
    )

    echo("\n-- searches for 'when does alice like meetings?' --")
    for who in ("acme/planner", "acme/coder", "globex/planner"):
        _, found = _call(
            client,
            "POST",
            "/v1/memories/search",
            keys[who],
            json={"query": "when does alice like meetings?", "limit": 3},
        )
        echo(f"{who}:")
        for hit in found["results"]:
            echo(f"   {hit['score']:.3f} [{hit['visibility']}] {hit['text']}")
    echo("acme/coder sees only the shared note; globex never sees acme's notes.")

    echo("\n-- erase alice in acme --")
    _, report = _call(
        client, "POST", "/v1/admin/erase", keys["acme/admin"], json={"user_id": "alice"}
    )
    echo(
        f"keys destroyed {report['keys_destroyed']}, vectors {report['vectors_deleted']}, "
        f"rows {report['rows_deleted']}; remaining {report['remaining']} "
        f"verified={report['verified']}"
    )
    _, after = _call(client, "GET", "/v1/memories", keys["acme/planner"])
    echo(f"acme/planner now lists {after['total']} memories")
    _, still = _call(client, "GET", "/v1/memories", keys["globex/planner"])
    echo(f"globex/planner still lists {still['total']} memories")

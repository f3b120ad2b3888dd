"""`memvault demo`: two tenants, private vs shared notes, and an erase, over the real REST API."""

from __future__ import annotations

import secrets
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memvault.config import Settings
from memvault.errors import VaultError

Echo = Callable[[str], None]


class DemoFailed(VaultError):
    """A demo step got an answer it did not expect (the message names the step and the code)."""

    code = "demo_failed"


def run_demo(data_dir: Path | None, echo: Echo) -> None:
    """Run the walkthrough in `data_dir` (a fresh temporary folder when None).

    Only the embedded stores are used, whatever MEMVAULT_DATABASE_URL, KEYSTORE_URL, QDRANT_URL
    or the master key settings say, so the demo never writes into a configured deployment. Each
    run creates fresh tenants, so it runs again on the same `data_dir`.
    """
    from memvault.store.datadir import DataDirLock

    with tempfile.TemporaryDirectory(prefix="memvault-demo-") as tmp:
        root = data_dir or Path(tmp)
        operator_key = "mvop_" + secrets.token_urlsafe(24)
        settings = Settings(
            data_dir=root,
            database_url=None,
            keystore_url=None,
            qdrant_url=None,
            master_key_file=None,
            master_key_env=None,
            operator_key=None,
            db_schema=None,
        )
        echo(f"== memvault demo (data in {root}) ==")
        lock = DataDirLock.acquire(root)  # before the slow imports: a busy directory fails fast
        try:
            from fastapi.testclient import TestClient

            from memvault.api.app import create_app
            from memvault.runtime.factory import open_services

            echo("loading the embedding model ...")
            services = open_services(settings, data_dir_lock=lock)
        except BaseException:
            lock.release()
            raise
        try:
            client = TestClient(create_app(services, operator_key=operator_key))
            _walkthrough(client, operator_key, secrets.token_hex(3), echo)
        finally:
            services.close()


def _call(
    client: Any, method: str, path: str, key: str, *, expect: int | tuple[int, ...], **kw: Any
) -> Any:
    """Call the API; the JSON answer when the status is `expect`, else `DemoFailed`.

    With a tuple of statuses, `(status, answer)`.
    """
    response = client.request(method, path, headers={"Authorization": f"Bearer {key}"}, **kw)
    body = response.json() if response.content else None
    if isinstance(expect, tuple) and response.status_code in expect:
        return response.status_code, body
    if response.status_code != expect:
        code = body.get("error", {}).get("code") if isinstance(body, dict) else None
        raise DemoFailed(f"{method} {path} answered {response.status_code} ({code or 'no code'})")
    return body


def _walkthrough(client: Any, operator_key: str, run_id: str, echo: Echo) -> None:
    keys: dict[str, str] = {}
    for label in ("acme", "globex"):
        tenant = f"{label}-{run_id}"
        admin = _call(
            client,
            "POST",
            "/v1/operator/tenants",
            operator_key,
            expect=201,
            json={"tenant_id": tenant},
        )
        echo(f"operator created tenant {tenant!r}; tenant-admin key {admin['key_id']}")
        for agent in ("planner", "coder"):
            issued = _call(
                client,
                "POST",
                "/v1/admin/keys",
                admin["api_key"],
                expect=201,
                json={"user_id": "alice", "agent_id": agent},
            )
            keys[f"{label}/{agent}"] = issued["api_key"]
        keys[f"{label}/admin"] = admin["api_key"]
    echo("issued agent keys for alice: acme/planner, acme/coder, globex/planner, globex/coder")

    echo("\n-- writes --")
    memories = [
        ("acme/planner", "Alice prefers morning meetings before ten", "private"),
        ("acme/planner", "Alice's team ships the billing service on Fridays", "shared"),
        ("globex/planner", "Alice prefers afternoon meetings after three", "private"),
    ]
    for who, text, visibility in memories:
        note = _call(
            client,
            "POST",
            "/v1/memories",
            keys[who],
            expect=201,
            json={"text": text, "visibility": visibility},
        )
        echo(f"{who:15} {visibility:8} -> 201 id={note['id'][:8]}…")
    refused = _call(
        client,
        "POST",
        "/v1/memories",
        keys["acme/planner"],
        expect=422,
        json={"text": "the deploy password: " + "Zq8" + "vT2mW9xLp"},
    )
    echo(
        f"acme/planner    a password -> 422 {refused['error']['code']} "
        f"({refused['error']['message']})"
    )

    echo("\n-- searches for 'when does alice like meetings?' --")
    for who in ("acme/planner", "acme/coder", "globex/planner"):
        found = _call(
            client,
            "POST",
            "/v1/memories/search",
            keys[who],
            expect=200,
            json={"query": "when does alice like meetings?", "limit": 3},
        )
        echo(f"{who}:")
        for hit in found["results"]:
            echo(f"   {hit['score']:.3f} [{hit['visibility']}] {hit['text']}")
    echo("acme/coder sees only the shared note; globex never sees acme's notes.")

    echo("\n-- erase alice in acme --")
    report = _call(
        client, "POST", "/v1/admin/erase", keys["acme/admin"], expect=200, json={"user_id": "alice"}
    )
    receipt = report.get("receipt", report)
    stores = receipt.get("stores") or []
    remaining = receipt.get("remaining", sum(int(s.get("remaining", 0)) for s in stores))
    echo(
        f"keys destroyed {receipt['keys_destroyed']}; remaining {remaining} "
        f"verified={receipt['verified']}"
    )
    status, after = _call(client, "GET", "/v1/memories", keys["acme/planner"], expect=(200, 401))
    if status == 401:
        echo("acme/planner's key was revoked with alice's data (401)")
    else:
        echo(f"acme/planner now lists {after['total']} memories")
    still = _call(client, "GET", "/v1/memories", keys["globex/planner"], expect=200)
    echo(f"globex/planner still lists {still['total']} memories")

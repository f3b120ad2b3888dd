"""What naming a session (`X-Session-Id`) costs a search: one primary-key lookup of its mark.

In-process, through the real app (TestClient), on real services: seeds one agent with notes,
then runs interleaved rounds of searches without the header (the path of every read before
untrusted-content mode) and with the header of an unmarked session, and prints the median time
per search of each and their ratio (measured in one run, alternating, on a noisy machine).

Run: nice .venv/bin/python -m bench.untrusted_overhead [--backend sqlite|postgres] [--rounds 20]
     (postgres: MEMVAULT_TEST_DATABASE_URL names the server; a fresh schema is made and dropped)
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy import create_engine, make_url, text

from memvault.api.app import create_app
from memvault.config import Settings
from memvault.runtime.factory import open_services
from memvault.store.database import upgrade_database

OPERATOR = "mvop_bench-operator-key-0123456789"
WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--per-round", type=int, default=25)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(data_dir=Path(tmp), amem=False)
        schema = None
        if args.backend == "postgres":
            admin = os.environ["MEMVAULT_TEST_DATABASE_URL"]
            schema = "mvb_" + uuid.uuid4().hex[:12]
            upgrade_database(admin, schema=schema)
            app_url = make_url(admin).set(username="memvault_app", password=None)
            settings = Settings(
                data_dir=Path(tmp),
                amem=False,
                database_url=app_url.render_as_string(hide_password=False),
                db_schema=schema,
            )
        services = open_services(settings)
        try:
            run(services, args.rounds, args.per_round, args.backend)
        finally:
            services.close()
            if schema is not None:
                engine = create_engine(os.environ["MEMVAULT_TEST_DATABASE_URL"])
                with engine.begin() as conn:
                    conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
                engine.dispose()


def run(services: object, rounds: int, per_round: int, backend: str) -> None:
    with TestClient(create_app(services, operator_key=OPERATOR)) as client:  # type: ignore[arg-type]
        op = {"Authorization": f"Bearer {OPERATOR}"}
        admin = client.post("/v1/operator/tenants", json={"tenant_id": "b"}, headers=op).json()
        auth = {"Authorization": f"Bearer {admin['api_key']}"}
        issued = client.post(
            "/v1/admin/keys", json={"user_id": "u", "agent_id": "a"}, headers=auth
        ).json()
        agent = {"Authorization": f"Bearer {issued['api_key']}"}
        for i in range(200):
            text = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(6)) + f" note {i}"
            client.post("/v1/memories", json={"text": text}, headers=agent)
        named = {**agent, "X-Session-Id": "chat-1"}
        body = {"query": "charlie delta golf", "limit": 5, "mode": "hybrid"}

        def timed(headers: dict[str, str]) -> float:
            start = time.perf_counter()
            for _ in range(per_round):
                r = client.post("/v1/memories/search", json=body, headers=headers)
                assert r.status_code == 200, r.text
            return (time.perf_counter() - start) / per_round

        timed(agent), timed(named)  # warm up
        plain, with_header = [], []
        for n in range(rounds):
            order = [(agent, plain), (named, with_header)]
            for headers, into in order if n % 2 == 0 else order[::-1]:
                into.append(timed(headers))
        a, b = statistics.median(plain), statistics.median(with_header)
        print(
            f"{backend}: search without X-Session-Id {a * 1000:.2f} ms, with {b * 1000:.2f} ms, "
            f"ratio {b / a:.3f} ({rounds} rounds x {per_round})"
        )


if __name__ == "__main__":
    main()

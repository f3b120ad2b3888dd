"""What each exfiltration control (issue 32) costs a search, as a ratio measured in one run.

`--control readable-idf`: BM25 IDF over the reader's readable set. One user of one tenant holds
LoCoMo turns written by two agents: `reader` (conversations 0..R-1) and `other` (the rest,
private). Each of `reader`'s questions is searched in each mode twice, alternately with the
readable-set IDF (the service) and without it (the query's terms weighed 1, the cost of the
search before issue 32 minus the store's IDF modifier, which is free), so both variants meet the
same machine load. Prints p50/p95 per variant and the ratio.

`--control session-header`: what naming a session (`X-Session-Id`) costs a search, one
primary-key lookup of its mark. In-process, through the real app (TestClient), on real services:
seeds one agent with notes, then runs interleaved rounds of searches without the header (the
path of every read before untrusted-content mode) and with the header of an unmarked session,
and prints the median time per search of each and their ratio.

Run: nice .venv/bin/python -m bench.controls --control readable-idf [--reader-convs 3]
     nice .venv/bin/python -m bench.controls --control session-header [--backend sqlite|postgres]
     [--rounds 20]   (postgres: MEMVAULT_TEST_DATABASE_URL names the server; a fresh schema is
     made and dropped)
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

from bench._harness import arg_parser, percentile
from bench._retrieval_data import load_locomo
from bench.locomo import TENANT, MemoEmbedder, add_in_batches, fresh_services, turn_drafts
from memvault.api.app import create_app
from memvault.config import Settings
from memvault.embed import make_embedder
from memvault.runtime.factory import open_services
from memvault.scope import Scope
from memvault.store.database import upgrade_database
from memvault.vault import retrieve

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


def readable_idf(args: argparse.Namespace) -> None:
    """Search each of `reader`'s LoCoMo questions with and without the readable-set IDF,
    alternating, and print p50/p95 per mode and variant and the p50 ratio."""
    convs = load_locomo()
    weigh = retrieve.weigh_by_readable_idf
    with tempfile.TemporaryDirectory(prefix="readable-idf-models-") as models:
        embedder = MemoEmbedder(make_embedder(args.embedder, data_dir=Path(models)))
        with fresh_services(embedder, "readable-idf-") as services:
            reader = services.vault.scoped(Scope(TENANT, "alice", "reader"))
            other = services.vault.scoped(Scope(TENANT, "alice", "other"))
            mine = convs[: args.reader_convs]
            for conv in mine:
                add_in_batches(reader, turn_drafts(conv, captions=False, sessions=True))
            n_other = 0
            for conv in convs[args.reader_convs :]:
                n_other += len(
                    add_in_batches(other, turn_drafts(conv, captions=False, sessions=True))
                )
            questions = [q.text for conv in mine for q in conv.questions]
            print(f"reader notes: {reader.list_notes()[1]}, other agent's notes: {n_other}")
            for mode in args.modes.split(","):
                times: dict[str, list[float]] = {"readable IDF": [], "no IDF": []}
                for q in questions:
                    for variant in ("readable IDF", "no IDF", "no IDF", "readable IDF"):
                        retrieve.weigh_by_readable_idf = (  # type: ignore[attr-defined]
                            weigh if variant == "readable IDF" else (lambda i, n, w, s: s)
                        )
                        started = time.perf_counter()
                        reader.search(q, limit=10, mode=mode)
                        times[variant].append((time.perf_counter() - started) * 1000)
                retrieve.weigh_by_readable_idf = weigh  # type: ignore[attr-defined]
                on, off = times["readable IDF"], times["no IDF"]
                print(
                    f"{mode:7s} readable IDF p50 {percentile(on, 50):.2f} ms "
                    f"p95 {percentile(on, 95):.2f}; no IDF p50 {percentile(off, 50):.2f} ms "
                    f"p95 {percentile(off, 95):.2f}; p50 ratio "
                    f"{percentile(on, 50) / percentile(off, 50):.3f}"
                )


def session_header(args: argparse.Namespace) -> None:
    """Seed one agent through the real app, then time searches without and with the
    `X-Session-Id` of an unmarked session in alternating rounds, and print the ratio."""
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
            _run_session_rounds(services, args.rounds, args.per_round, args.backend)
        finally:
            services.close()
            if schema is not None:
                engine = create_engine(os.environ["MEMVAULT_TEST_DATABASE_URL"])
                with engine.begin() as conn:
                    conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
                engine.dispose()


def _run_session_rounds(services: object, rounds: int, per_round: int, backend: str) -> None:
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


def main(argv: list[str] | None = None) -> int:
    parser = arg_parser(__doc__)
    parser.add_argument("--control", choices=["readable-idf", "session-header"], required=True)
    parser.add_argument("--embedder", default="use-m3", help="readable-idf: the embedder")
    parser.add_argument("--reader-convs", type=int, default=3, help="readable-idf: reader's")
    parser.add_argument("--modes", default="sparse,hybrid,full", help="readable-idf: modes")
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--rounds", type=int, default=20, help="session-header: rounds")
    parser.add_argument("--per-round", type=int, default=25, help="session-header: searches")
    args = parser.parse_args(argv)
    if args.control == "readable-idf":
        readable_idf(args)
    else:
        session_header(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

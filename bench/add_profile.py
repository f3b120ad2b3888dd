"""The add path before and after issue 10's item 1, as ratios measured in one run.

"before" is the add and the audit append of commit 315e63e, loaded from git into this process:
pending insert + statistics (ORM), a separate duplicate check, upsert, a second transaction to
mark the row active; the audit append reads the head (`ORDER BY seq DESC LIMIT 1`) per event.
"after" is the working tree: upsert first, then ONE transaction of Core statements (insert
guarded by the duplicate check, statistics `UPDATE ... RETURNING`); the audit append is one
guarded INSERT after the head this process last wrote.

The two run side by side on one vault in two tenants (`before`, `after`), interleaved add by
add, with the real USE-m3 embedder, the screen, AES-GCM and keyed BM25 on, so load on the machine
hits both alike:

- in process: `ScopedVault.add`;
- the audit append alone: `AuditLog.record` of a `note.added` event;
- over HTTP: `POST /v1/memories` through the real app (TestClient), audit event included.

Per variant it prints p50/p95 (ms), adds/s (N / the variant's summed time) and the commits and
SQL statements one add makes. `--profile` adds a cProfile of the "after" adds (top functions).

Run: .venv/bin/python -m bench.add_profile [--rounds 300] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import importlib.util
import io
import json
import pstats
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import event

from bench.hardening import sentence, summary
from memvault.api.app import create_app
from memvault.config import Settings
from memvault.embed import make_embedder
from memvault.runtime.factory import Services, open_services
from memvault.scope import Scope
from memvault.vault.service import ScopedVault

BEFORE_COMMIT = "315e63e"
OPERATOR_KEY = "mvop_bench-add-profile-0123456789"
ROOT = Path(__file__).resolve().parent.parent


def _module_at(commit: str, path: str, name: str) -> types.ModuleType:
    """Import `path` as it was at `commit` (from git) under the module name `name`."""
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{commit}:{path}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    exec(compile(source, f"{commit}:{path}", "exec"), module.__dict__)
    return module


def install_before(services: Services) -> None:
    """Tenants named `before*` take the add and the audit append of `BEFORE_COMMIT`."""
    old_writes = _module_at(BEFORE_COMMIT, "src/memvault/vault/writes.py", "_before_writes")
    old_audit = _module_at(BEFORE_COMMIT, "src/memvault/vault/audit.py", "_before_audit")
    new_writer = ScopedVault._writer

    def writer(view: ScopedVault) -> Any:
        if view.scope.tenant.startswith("before"):
            return old_writes.NoteWriter(view)
        return new_writer(view)

    ScopedVault._writer = writer  # type: ignore[method-assign,assignment]
    audit = services.audit
    new_append = audit._append
    old_append = types.MethodType(old_audit.AuditLog._append, audit)

    def append(tenant: str, *args: Any) -> dict[str, Any]:
        return (old_append if tenant.startswith("before") else new_append)(tenant, *args)

    audit._append = append  # type: ignore[method-assign,assignment]


class SqlCounter:
    """Commits and statements SQLite runs while `active`, counted by SQLite's statement trace
    on every connection (the add's own transaction runs on the driver's connection, which
    SQLAlchemy's engine events never see: `store/driver_sql.py`)."""

    def __init__(self, services: Services) -> None:
        self.commits = self.statements = 0
        self.active = False
        engine = services.db.engine
        engine.dispose()  # every connection from here on is new, and traced
        event.listen(engine, "connect", self._trace)

    def _trace(self, dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.set_trace_callback(self._statement)

    def _statement(self, sql: str) -> None:
        if not self.active:
            return
        head = sql.lstrip().upper()
        if head.startswith("COMMIT"):
            self.commits += 1
        elif not head.startswith(("BEGIN", "ROLLBACK")):
            self.statements += 1

    def measure(self, fn: Callable[[], Any]) -> tuple[int, int]:
        self.commits = self.statements = 0
        self.active = True
        try:
            fn()
        finally:
            self.active = False
        return self.commits, self.statements


def interleave(
    rounds: int, variants: dict[str, Callable[[int], Any]]
) -> dict[str, dict[str, float]]:
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for i in range(rounds):
        for name, fn in variants.items():
            start = time.perf_counter()
            fn(i)
            samples[name].append((time.perf_counter() - start) * 1000)
    out: dict[str, dict[str, float]] = {}
    for name, values in samples.items():
        out[name] = dict(summary(values), per_s=round(1000 * len(values) / sum(values), 1))
    return out


def run(rounds: int, root: Path, profile: bool) -> dict[str, Any]:
    embedder = make_embedder("use-m3", data_dir=root)
    services = open_services(Settings(data_dir=root / "data"), embedder=embedder)
    try:
        install_before(services)
        counter = SqlCounter(services)
        views = {}
        for name in ("before", "after"):
            services.tenants.create(name)
            views[name] = services.vault.scoped(Scope(name, "u1", "a1"))
            views[name].add(f"warm up the {name} write path once before timing it")
        n = iter(range(10**9))
        results: dict[str, Any] = {"rounds": rounds, "before_commit": BEFORE_COMMIT}
        adds = {name: _adder(view, n) for name, view in views.items()}
        results["sql_per_add"] = {
            name: counter.measure(functools.partial(add, 0)) for name, add in adds.items()
        }
        results["in_process"] = interleave(rounds, adds)
        results["audit_record"] = interleave(
            rounds, {name: _auditor(services, name) for name in views}
        )
        results["http"] = _http(services, rounds, n)
        if profile:
            results["profile_after"] = _profile(views["after"], rounds, n)
        return results
    finally:
        services.close()


def _adder(view: ScopedVault, n: Any) -> Callable[[int], Any]:
    def add(_i: int) -> Any:
        return view.add(sentence(next(n)))

    return add


def _auditor(services: Services, tenant: str) -> Callable[[int], Any]:
    def record(_i: int) -> Any:
        return services.audit.record(tenant, "key1", "note.added", user_id="u1", flags=0)

    return record


def _http(services: Services, rounds: int, n: Any) -> dict[str, Any]:
    with TestClient(create_app(services, operator_key=OPERATOR_KEY)) as client:
        operator = {"Authorization": f"Bearer {OPERATOR_KEY}"}
        auth: dict[str, dict[str, str]] = {}
        for name in ("before", "after"):
            tenant = f"{name}-http"
            admin = client.post(
                "/v1/operator/tenants", json={"tenant_id": tenant}, headers=operator
            ).json()["api_key"]
            key = client.post(
                "/v1/admin/keys",
                json={"user_id": "u1", "agent_id": "a1"},
                headers={"Authorization": f"Bearer {admin}"},
            ).json()["api_key"]
            auth[name] = {"Authorization": f"Bearer {key}"}

        def post(name: str) -> None:
            r = client.post("/v1/memories", json={"text": sentence(next(n))}, headers=auth[name])
            assert r.status_code == 201, r.status_code

        def poster(name: str) -> Callable[[int], None]:
            return lambda _i: post(name)

        for name in auth:
            post(name)  # warm up
        return interleave(rounds, {name: poster(name) for name in auth})


def _profile(view: ScopedVault, rounds: int, n: Any) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(rounds):
        view.add(sentence(next(n)))
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(25)
    return out.getvalue()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--out", type=Path, default=Path("bench/out/add_profile.json"))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        results = run(args.rounds, Path(tmp), args.profile)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({k: v for k, v in results.items() if k != "profile_after"}))
    print(f"rounds {args.rounds}, before = {BEFORE_COMMIT}, after = working tree")
    for name, (commits, statements) in results["sql_per_add"].items():
        print(f"sql per add      {name:6s} commits {commits}  statements {statements}")
    for section in ("in_process", "audit_record", "http"):
        r = results[section]
        b, a = r["before"], r["after"]
        print(
            f"{section:12s} before p50 {b['p50_ms']:6.2f} ms p95 {b['p95_ms']:6.2f} "
            f"{b['per_s']:6.1f}/s | after p50 {a['p50_ms']:6.2f} ms p95 {a['p95_ms']:6.2f} "
            f"{a['per_s']:6.1f}/s | p50 ratio {a['p50_ms'] / b['p50_ms']:.2f}"
        )
    if "profile_after" in results:
        print(results["profile_after"])


if __name__ == "__main__":
    main()

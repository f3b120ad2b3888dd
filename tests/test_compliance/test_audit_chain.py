"""The audit chain: gap-free seqs under concurrent writers (SQLite and PostgreSQL), the DESIGN
event format, pseudonymous subjects, burst aggregation, and migration 0006's re-chaining."""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from sqlalchemy import create_engine, text

from memvault.audit.log import AuditLog
from memvault.canonical import GENESIS, canonical_json
from memvault.errors import InvalidRequest
from memvault.keyring import Keyring
from memvault.keyring._master import LocalMasterKey
from memvault.store.database import Database, _alembic_config
from memvault.store.models import ApiKeyRow
from tests._helpers import run_threads
from tests.conftest import app_role_url, drop_schema, migrated_pg_schema, pg_url_or_skip

THREADS, PER_THREAD = 8, 100


class Stores:
    """Two independent `Database` engines on one data store (as two processes would have)."""

    def __init__(self, dbs: list[Database], keyring: Keyring) -> None:
        self.dbs = dbs
        self.keyring = keyring

    def log(self, index: int = 0, clock: Any = time.time) -> AuditLog:
        return AuditLog(self.dbs[index], clock, self.keyring)


@pytest.fixture
def stores(backend: str, tmp_path: Path) -> Iterator[Stores]:
    keyring = Keyring.open("sqlite://", LocalMasterKey(os.urandom(32)))
    cleanup: list[Any] = []
    if backend == "postgres":
        admin = pg_url_or_skip()
        schema = migrated_pg_schema(admin)
        cleanup.append(lambda: drop_schema(admin, schema))
        dbs = [Database(app_role_url(admin), schema=schema) for _ in range(2)]
    else:
        url = f"sqlite:///{tmp_path / 'data.db'}"
        dbs = [Database(url) for _ in range(2)]
        dbs[0].migrate()
    for db in dbs:
        db.migrate()
    yield Stores(dbs, keyring)
    for db in dbs:
        db.dispose()
    keyring.close()
    for step in cleanup:
        step()


def _chain_ok(events: list[dict[str, Any]]) -> bool:
    prev = GENESIS
    for expected_seq, event in enumerate(events, start=1):
        body = {k: v for k, v in event.items() if k != "hash"}
        digest = hashlib.sha256(canonical_json(body)).hexdigest()
        if event["seq"] != expected_seq or event["prev"] != prev or event["hash"] != digest:
            return False
        prev = event["hash"]
    return True


def test_eight_threads_append_eight_hundred_events_without_a_gap(stores: Stores) -> None:
    logs = [stores.log(0), stores.log(1)]  # two appenders that share no in-process lock
    start = threading.Barrier(THREADS)

    def writer(number: int) -> None:
        start.wait()
        for i in range(PER_THREAD):
            logs[number % 2].record("acme", f"key{number}", "note.added", count=i)

    errors = run_threads(writer, THREADS)
    assert not errors, errors
    events = list(logs[0].events("acme"))
    assert len(events) == THREADS * PER_THREAD == logs[1].count("acme")
    assert [e["seq"] for e in events] == list(range(1, THREADS * PER_THREAD + 1))
    per_actor = {f"key{n}": 0 for n in range(THREADS)}
    for event in events:
        per_actor[event["actor"]] += 1
    assert set(per_actor.values()) == {PER_THREAD}
    assert _chain_ok(events)
    assert logs[0].verify("acme")


def test_concurrent_events_of_a_tenant_share_one_transaction(
    stores: Stores, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = stores.log(0)
    log.record("acme", "key0", "note.added", count=0)
    db = stores.dbs[0]
    real = db.driver_transaction
    opened: list[str | None] = []
    inside, release = threading.Event(), threading.Event()

    @contextmanager
    def first_one_held(tenant: str | None) -> Iterator[Any]:
        opened.append(tenant)
        if len(opened) == 1:  # the first writer's transaction stays open until released
            inside.set()
            assert release.wait(30)
        with real(tenant) as conn:
            yield conn

    monkeypatch.setattr(db, "driver_transaction", first_one_held)
    returned: dict[int, dict[str, Any]] = {}

    def writer(number: int) -> None:
        returned[number] = log.record("acme", f"key{number}", "note.added", count=number)

    first = threading.Thread(target=writer, args=(1,))
    first.start()
    assert inside.wait(30)
    others = [threading.Thread(target=writer, args=(n,)) for n in range(2, 9)]
    for thread in others:
        thread.start()
    deadline = time.monotonic() + 30
    while log._batcher("acme").pending() < len(others) and time.monotonic() < deadline:
        time.sleep(0.01)
    release.set()
    for thread in [first, *others]:
        thread.join(30)
    assert opened == ["acme", "acme"]  # one transaction for the first, one for the seven
    events = list(log.events("acme"))
    assert [e["seq"] for e in events] == list(range(1, 10)) and _chain_ok(events)
    assert returned[1]["seq"] == 2 and sorted(e["seq"] for e in returned.values()) == list(
        range(2, 10)
    )
    for number, event in returned.items():  # each caller got the event stored for it
        assert events[event["seq"] - 1] == event and event["actor"] == f"key{number}"


def test_events_have_the_design_shape_and_pseudonymous_users(stores: Stores) -> None:
    log = stores.log(0, clock=lambda: 1_700_000_000.5)
    event = log.record(
        "acme",
        "0123456789abcdef",
        "note.added",
        subject={"user_id": "alice", "agent_id": "bot", "note_id": "n-1"},
        results=3,
    )
    assert set(event) == {
        "seq",
        "tenant_id",
        "at",
        "actor",
        "action",
        "subject",
        "details",
        "prev",
        "hash",
    }
    assert event["seq"] == 1 and event["prev"] == GENESIS
    assert event["at"] == "2023-11-14T22:13:20.500Z"
    note_tag = stores.keyring.index_key("acme").tag("note:n-1")
    assert event["subject"]["agent_id"] == "bot" and event["subject"]["note_id"] == note_tag
    tag = stores.keyring.index_key("acme").tag("user:alice")
    assert event["subject"]["user_id"] == tag != "alice"
    assert event["details"] == {"results": 3}
    # Legacy keyword ids move to the subject, pseudonymised too.
    legacy = log.record("acme", "k", "erase", user_id="alice", agent_id=None, rows=2)
    assert legacy["subject"] == {"user_id": tag, "agent_id": None}
    assert legacy["details"] == {"rows": 2} and legacy["prev"] == event["hash"]
    stored = list(log.events("acme"))
    assert stored == [event, legacy]
    with stores.dbs[0].session("acme") as sess:
        dump = " ".join(
            str(v) for row in sess.execute(text("SELECT * FROM audit_events")) for v in row
        )
    assert "alice" not in dump


def test_details_refuse_text_and_floats(stores: Stores) -> None:
    log = stores.log(0)
    with pytest.raises(InvalidRequest, match="detail note"):
        log.record("acme", "k", "x", note="my sister lives in Lyon")
    with pytest.raises(InvalidRequest, match="float"):
        log.record("acme", "k", "x", ratio=0.5)
    with pytest.raises(InvalidRequest, match="subject"):
        log.record("acme", "k", "x", subject={"user_id": "not an id"})
    assert log.count("acme") == 0


def test_canonical_form_refuses_a_float_at_any_depth() -> None:
    """`canonical` checks plain scalars by type first; a float anywhere still fails."""
    from types import MappingProxyType

    from memvault.canonical import canonical_json as canonical

    assert canonical({"b": [1, True, None, "x"], "a": (2,)}) == b'{"a":[2],"b":[1,true,null,"x"]}'
    for bad in (
        0.5,
        {"n": 1.0},
        {"outer": {"inner": [1, (2, 0.25)]}},
        [1, [2, [3.0]]],
        MappingProxyType({"n": 1.5}),  # a Mapping that is no dict
    ):
        with pytest.raises(InvalidRequest, match="floats are not allowed"):
            canonical(bad)


def test_refusal_bursts_become_one_event_per_window(stores: Stores) -> None:
    now = [1_700_000_000.0]
    log = AuditLog(stores.dbs[0], lambda: now[0], stores.keyring, burst_window=60)
    with stores.dbs[0].session("acme") as sess:
        sess.add(
            ApiKeyRow(
                tenant_id="acme",
                key_id="0123456789abcdef",
                secret_sha256="0" * 64,
                user_id="alice",
                agent_id="bot",
                role="agent",
                created_at=now[0],
            )
        )
    for _ in range(25):
        log.note_denied("acme", "unauthorized", "0123456789abcdef")
        now[0] += 1
    log.note_denied("acme", "unauthorized", "ffffffffffffffff")  # unknown key: metrics only
    log.note_denied("nosuchtenant", "unauthorized", "0123456789abcdef")
    assert log.count("acme") == 0  # the window (60 s) is still open
    now[0] += 60
    assert log.flush_bursts() == 1
    (event,) = list(log.events("acme"))
    assert event["action"] == "security.unauthorized" and event["actor"] == "system"
    assert event["subject"] == {"key_id": "0123456789abcdef"}
    assert event["details"]["count"] == 25 and event["details"]["distinct_keys"] == 1
    assert log.flush_bursts(force=True) == 0
    assert log.count("nosuchtenant") == 0


# --- migration 0006 ----------------------------------------------------------------------------

OLD_ROWS = [
    (1, 1_700_000_000.25, "operator", "tenant.created", {"key_id": "aaaaaaaaaaaaaaaa"}),
    (
        2,
        1_700_000_001.0,
        "aaaaaaaaaaaaaaaa",
        "key.issued",
        {"key_id": "bbbbbbbbbbbbbbbb", "role": "agent"},
    ),
    (
        3,
        1_700_000_002.0,
        "aaaaaaaaaaaaaaaa",
        "erase",
        {"user_id": "alice", "agent_id": None, "rows": 3, "verified": True},
    ),
]


def _upgrade(conn: Any, revision: str) -> None:
    cfg = _alembic_config()
    cfg.attributes["connection"] = conn
    command.upgrade(cfg, revision)


def test_migration_0006_converts_and_rechains_existing_events(backend: str, tmp_path: Path) -> None:
    if backend == "postgres":
        admin = pg_url_or_skip()
        schema = "mvt_mig_" + os.urandom(4).hex()
        engine = create_engine(admin, connect_args={"options": f"-csearch_path={schema}"})
        with engine.begin() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    else:
        engine = create_engine(f"sqlite:///{tmp_path / 'old.db'}")
    try:
        with engine.begin() as conn:
            _upgrade(conn, "0005")
            for seq, ts, actor, action, detail in OLD_ROWS:
                conn.execute(
                    text(
                        "INSERT INTO audit_events (tenant_id, seq, ts, actor, action, detail, "
                        "prev_hash, hash) VALUES ('acme', :s, :ts, :a, :ac, :d, 'x', 'y')"
                    ),
                    {"s": seq, "ts": ts, "a": actor, "ac": action, "d": json.dumps(detail)},
                )
        with engine.begin() as conn:
            _upgrade(conn, "head")
            rows = conn.execute(
                text(
                    "SELECT seq, at, actor, action, subject, details, prev, hash "
                    "FROM audit_events WHERE tenant_id = 'acme' ORDER BY seq"
                )
            ).all()
            if backend == "postgres":
                forced = conn.execute(
                    text(
                        "SELECT relforcerowsecurity FROM pg_class WHERE relname = 'audit_events' "
                        "AND relnamespace = current_schema()::regnamespace"
                    )
                ).scalar_one()
                assert forced
        events = [
            {
                "seq": r.seq,
                "tenant_id": "acme",
                "at": r.at,
                "actor": r.actor,
                "action": r.action,
                "subject": json.loads(r.subject),
                "details": json.loads(r.details),
                "prev": r.prev,
                "hash": r.hash,
            }
            for r in rows
        ]
        assert _chain_ok(events)
        assert events[0]["at"] == "2023-11-14T22:13:20.250Z"
        assert events[0]["subject"] == {"key_id": "aaaaaaaaaaaaaaaa"}
        assert events[1]["details"] == {"role": "agent"}
        assert events[2]["subject"] == {"agent_id": None}
        assert events[2]["details"] == {"rows": 3, "verified": True, "user_id_removed": True}
        assert "alice" not in json.dumps(events)
    finally:
        if backend == "postgres":
            with engine.begin() as conn:
                conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        engine.dispose()

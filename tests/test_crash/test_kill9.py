"""kill -9 under mixed add / patch / delete traffic, then a restart with no manual step.

A real `memvault serve` subprocess takes traffic from three client threads, each on its own
notes, and is killed with SIGKILL mid-flight. After a plain restart (which reconciles before it
serves), every acknowledged write is readable and found by an exact-text search, an
unacknowledged one is either fully there or not at all, no row is left pending or staged, no
vector is orphaned, and a retried add with the same `Idempotency-Key` makes one note.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import string
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from tests.serving import clean_env, free_port, start_serve, stop, wait_healthy

OPERATOR_KEY = "mvop_kill9-operator-key-0123456789"
THREADS = 3
TRAFFIC_SECONDS = 4.0


@dataclass
class Ledger:
    """What the server acknowledged, per note: its text, or None once deleted."""

    acked: dict[str, str | None] = field(default_factory=dict)
    # note id -> texts it may show (an unacknowledged update may or may not have landed)
    maybe: dict[str, set[str | None]] = field(default_factory=dict)
    unacked_adds: list[tuple[str, str]] = field(default_factory=list)  # (idempotency key, text)
    acked_adds: list[tuple[str, str, str]] = field(default_factory=list)  # (key, text, note id)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _traffic(base: str, key: str, worker: int, halt: threading.Event, ledger: Ledger) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    mine: list[str] = []
    n = 0
    with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
        while not halt.is_set():
            n += 1
            tag = "".join(random.choices(string.ascii_lowercase, k=12))  # no digit runs (PII)
            text = f"Worker {worker} fact {n}: parcel {tag} arrives on dock {n}"
            op = "add" if len(mine) < 3 or n % 3 == 0 else ("patch" if n % 3 == 1 else "delete")
            try:
                if op == "add":
                    idem = uuid.uuid4().hex
                    with ledger.lock:
                        ledger.unacked_adds.append((idem, text))
                    r = client.post(
                        "/v1/memories", json={"text": text}, headers={"Idempotency-Key": idem}
                    )
                    assert r.status_code == 201, r.text
                    with ledger.lock:
                        ledger.unacked_adds.remove((idem, text))
                        ledger.acked[r.json()["id"]] = r.json()["text"]
                        ledger.acked_adds.append((idem, text, r.json()["id"]))
                    mine.append(r.json()["id"])
                elif op == "patch":
                    note_id = mine[-1]
                    with ledger.lock:
                        ledger.maybe[note_id] = {ledger.acked[note_id], text}
                    r = client.patch(f"/v1/memories/{note_id}", json={"text": text})
                    assert r.status_code == 200, r.text
                    with ledger.lock:
                        ledger.acked[note_id] = r.json()["text"]
                        ledger.maybe.pop(note_id)
                else:
                    note_id = mine.pop(0)
                    with ledger.lock:
                        ledger.maybe[note_id] = {ledger.acked[note_id], None}
                    r = client.delete(f"/v1/memories/{note_id}")
                    assert r.status_code == 204, r.text
                    with ledger.lock:
                        ledger.acked[note_id] = None
                        ledger.maybe.pop(note_id)
            except httpx.HTTPError:
                return  # the server died under this request: it stays unacknowledged


def _admin(base: str) -> str:
    r = httpx.post(
        f"{base}/v1/operator/tenants",
        json={"tenant_id": "acme"},
        headers={"Authorization": f"Bearer {OPERATOR_KEY}"},
    )
    assert r.status_code == 201, r.text
    admin = r.json()["api_key"]
    r = httpx.post(
        f"{base}/v1/admin/keys",
        json={"user_id": "alice", "agent_id": "planner"},
        headers={"Authorization": f"Bearer {admin}"},
    )
    assert r.status_code == 201, r.text
    return str(r.json()["api_key"])


def _check_note(client: httpx.Client, note_id: str, allowed: set[str | None]) -> None:
    r = client.get(f"/v1/memories/{note_id}")
    if r.status_code == 404:
        assert None in allowed, f"acknowledged note {note_id} is gone"
        return
    assert r.status_code == 200, r.text
    text = r.json()["text"]
    assert text in allowed, f"note {note_id} shows a version never written"
    hits = client.post(
        "/v1/memories/search", json={"query": text, "limit": 10, "mode": "sparse"}
    ).json()["results"]
    assert note_id in [h["id"] for h in hits], f"note {note_id} not found by its exact text"


@pytest.mark.slow
def test_kill9_under_traffic_then_restart_repairs_everything(tmp_path: Path) -> None:
    data = tmp_path / "data"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = clean_env(MEMVAULT_OPERATOR_KEY=OPERATOR_KEY)
    proc = start_serve(data, port, env)
    try:
        wait_healthy(base, proc)
        key = _admin(base)
        ledger = Ledger()
        halt = threading.Event()
        threads = [
            threading.Thread(target=_traffic, args=(base, key, w, halt, ledger), daemon=True)
            for w in range(THREADS)
        ]
        for t in threads:
            t.start()
        time.sleep(TRAFFIC_SECONDS)
        deadline = time.monotonic() + 180  # a loaded machine acknowledges slowly: wait for some
        while len(ledger.acked) < 6 and time.monotonic() < deadline:
            time.sleep(0.5)
        os.killpg(proc.pid, signal.SIGKILL)  # mid-flight, no warning
        proc.wait(timeout=30)
        halt.set()
        for t in threads:
            t.join(timeout=60)
        assert len(ledger.acked) >= 6, "too little traffic was acknowledged to prove anything"

        proc = start_serve(data, port, env)  # a plain restart: no reconcile by hand
        wait_healthy(base, proc)
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}) as client:
            for note_id, text in ledger.acked.items():
                _check_note(client, note_id, ledger.maybe.get(note_id, {text}))
            idem, text, first_id = ledger.acked_adds[0]  # an acknowledged add, retried: replayed
            r = client.post("/v1/memories", json={"text": text}, headers={"Idempotency-Key": idem})
            assert r.status_code == 201 and r.json()["id"] == first_id
            assert r.headers.get("Idempotent-Replayed") == "true"
            for idem, text in ledger.unacked_adds:  # retried with the same key: one note
                r = client.post(
                    "/v1/memories", json={"text": text}, headers={"Idempotency-Key": idem}
                )
                assert r.status_code == 201, r.text
                again = client.post(
                    "/v1/memories", json={"text": text}, headers={"Idempotency-Key": idem}
                )
                assert again.json()["id"] == r.json()["id"]
                hits = client.post(
                    "/v1/memories/search", json={"query": text, "limit": 10, "mode": "sparse"}
                ).json()["results"]
                assert [h["text"] for h in hits].count(text) == 1
        _assert_nothing_pending(data / "memvault.db")
    finally:
        stop(proc)
    _assert_no_orphan_vectors(data)


def _assert_nothing_pending(db: Path) -> None:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        pending = conn.execute("SELECT count(*) FROM notes WHERE status = 'pending'").fetchone()[0]
        staged = conn.execute("SELECT count(*) FROM notes WHERE next_at IS NOT NULL").fetchone()[0]
    finally:
        conn.close()
    assert (pending, staged) == (0, 0)


def _assert_no_orphan_vectors(data: Path) -> None:
    from memvault.config import Settings
    from memvault.index.base import PointFilter
    from memvault.runtime.factory import open_services
    from memvault.store.models import NoteRow

    services: Any = open_services(Settings(data_dir=data), screen=None)
    try:
        with services.db.session("acme") as sess:
            rows = set(
                sess.execute(select(NoteRow.id).where(NoteRow.tenant_id == "acme")).scalars()
            )
        points = set(services.index.scroll_ids("acme", PointFilter()))
    finally:
        services.close()
    assert points and points <= rows, f"{len(points - rows)} orphan vectors"

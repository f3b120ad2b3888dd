"""kill -9 with group commit on: every add acknowledged from a micro-batch survives the crash.

A subprocess opens the embedded default with group commit on and adds from several threads at
once, printing each note id only after its `add` returned (acknowledged), with the committer's
counts. Once adds have been coalesced into batches, it is killed with SIGKILL mid-run. After
reopening (the startup reconcile), every printed note is readable, found by its exact text, and
no vector is left without its row.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import select

from memvault.config import Settings
from memvault.embed.base import Embedder
from memvault.index.base import PointFilter
from memvault.runtime.factory import open_services
from memvault.scope import Scope
from memvault.store.models import NoteRow
from tests.serving import clean_env

THREADS = 6
MIN_ACKS = 40
STARTUP_TIMEOUT = 300.0  # model and screen load in the subprocess (a guard, never asserted on)

WRITER = r"""
import sys, threading
from pathlib import Path
from memvault.config import Settings
from memvault.scope import Scope
from memvault.runtime.factory import open_services
sys.path.insert(0, sys.argv[3])
from tests.test_crash.test_group_commit_kill9 import scope_of, text_of

services = open_services(Settings(data_dir=Path(sys.argv[1])))
services.tenants.create("acme")
lock = threading.Lock()

def work(worker):
    vault = services.vault.scoped(scope_of(worker))
    n = 0
    while True:
        n += 1
        note = vault.add(text_of(worker, n))
        stats = services.vault.group_commit.stats()
        with lock:  # acknowledged: the add returned
            print("ack", worker, n, note.id, stats.batches, stats.jobs, flush=True)

for worker in range(int(sys.argv[2])):
    threading.Thread(target=work, args=(worker,), daemon=True).start()
threading.Event().wait()
"""

WORDS = ("amber", "birch", "cedar", "dune", "ember", "fjord", "grove", "heath", "inlet", "juniper")


def scope_of(worker: int) -> Scope:
    """Writers share a user two by two, each with its own agent."""
    return Scope("acme", f"user{worker % 2}", f"agent{worker}")


def text_of(worker: int, n: int) -> str:
    """A distinct text per (worker, n), in words only (digit runs could look like PII)."""
    tag = " ".join(WORDS[int(d)] for d in str(n))
    return f"Worker {WORDS[worker]} logged the parcel called {tag} at the loading dock"


@pytest.mark.slow
def test_acknowledged_adds_of_a_group_commit_survive_kill9(
    tmp_path: Path, embedder: Embedder
) -> None:
    data = tmp_path / "data"
    root = str(Path(__file__).resolve().parents[2])
    env = clean_env(MEMVAULT_GROUP_COMMIT="true")
    errors = tmp_path / "writer.err"
    with errors.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(data), str(THREADS), root],
            env=env,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            start_new_session=True,
        )
    acks: list[list[str]] = []
    coalesced = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            fields = line.split()
            if line.endswith("\n") and len(fields) == 6 and fields[0] == "ack":  # whole lines
                acks.append(fields)
                if len(acks) >= MIN_ACKS and int(fields[5]) > int(fields[4]):
                    coalesced.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while not coalesced.wait(0.2):
            if proc.poll() is not None:
                pytest.fail(f"the writer exited early: {errors.read_text()[-2000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"no coalesced batch after {len(acks)} acknowledged adds")
        os.killpg(proc.pid, signal.SIGKILL)  # mid-run, no warning
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    reader.join(timeout=30)
    last = acks[-1]
    assert int(last[5]) > int(last[4]), "adds were never coalesced into a batch"

    services = open_services(Settings(data_dir=data), embedder=embedder, screen=None)
    try:
        services.start()  # reconciles first: the data-directory lock proves nothing is in flight
        for _, worker, n, note_id, _, _ in acks:
            text = text_of(int(worker), int(n))
            vault = services.vault.scoped(scope_of(int(worker)))
            assert vault.get(note_id).text == text, f"acknowledged note {note_id} is lost"
            hits = vault.search(text, limit=10, mode="sparse")
            assert note_id in [h.note.id for h in hits], f"{note_id} not found by its text"
        with services.db.session("acme") as sess:
            rows = set(
                sess.execute(select(NoteRow.id).where(NoteRow.tenant_id == "acme")).scalars()
            )
        points = set(services.index.scroll_ids("acme", PointFilter()))
        assert points <= rows, f"{len(points - rows)} orphan vectors after the reconcile"
    finally:
        services.close()

"""Group commit: concurrent adds share one embedding call, one upsert per namespace and one
transaction per tenant; a lone writer never waits; a bad job fails only its own caller.

Batches are made deterministic without timing: a first add is held at its upsert (the fault
hook) while the writers under test queue behind it; once all of them are pending it is
released, and the next leader takes every pending job as one batch.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from sqlalchemy import func, select

from memvault.embed.base import Embedder
from memvault.embed.cache import CachedEmbedder, EmbeddingCache
from memvault.errors import NotFound
from memvault.index.base import PointFilter
from memvault.scope import Scope
from memvault.store.models import NoteRow
from memvault.vault import group_commit
from memvault.vault.notes import Note
from tests._helpers import poll_until, run_threads
from tests.conftest import ServicesFactory
from tests.db_probes import notes_inserted_per_transaction
from tests.faults import Crash

BLOCKER = Scope("t1", "blocker", "a")
HOLDING = itertools.count()
SYNC_TIMEOUT = 120.0  # seconds to wait for threads to line up (a guard, never asserted on)


class Gate:
    """A fault hook: holds the first step it sees at `after_upsert`, then defers to `then`."""

    def __init__(self, then: Callable[[str], None] | None = None) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self._armed = True
        self._held_done = False
        self._then = then

    def __call__(self, step: str) -> None:
        if step == "after_upsert" and self._armed:
            self._armed = False
            self.entered.set()
            assert self.release.wait(SYNC_TIMEOUT)
            return
        if step == "after_commit" and not self._held_done:  # the held batch's own commit
            self._held_done = True
            return
        if self._then is not None:
            self._then(step)


def _wait_for(condition: Callable[[], bool], what: str) -> None:
    if not poll_until(condition, SYNC_TIMEOUT, step=0.005):
        pytest.fail(f"timed out waiting for {what}")


def run_as_one_batch(
    services: Any,
    adds: list[tuple[Scope, str]],
    then: Callable[[str], None] | None = None,
) -> list[Note | BaseException]:
    """Add each `(scope, text)` from its own thread, all in ONE batch; outcomes in order.

    `then` is the fault hook once the holding add's batch is past.
    """
    committer = services.vault.group_commit
    gate = Gate(then)
    services.vault.fault = gate
    outcomes: list[Note | BaseException | None] = [None] * len(adds)

    def add(i: int, scope: Scope, text: str) -> None:
        try:
            outcomes[i] = services.vault.scoped(scope).add(text)
        except BaseException as exc:  # handed back to the test
            outcomes[i] = exc

    holding = f"Holding note {next(HOLDING)} of the batch tests"  # never a twin of another
    blocker = threading.Thread(target=lambda: services.vault.scoped(BLOCKER).add(holding))
    blocker.start()
    try:
        assert gate.entered.wait(SYNC_TIMEOUT)
        threads = [
            threading.Thread(target=add, args=(i, scope, text))
            for i, (scope, text) in enumerate(adds)
        ]
        for t in threads:
            t.start()
        _wait_for(lambda: committer.pending() == len(adds), "every writer to queue")
        before = committer.stats()
    finally:
        gate.release.set()
        blocker.join(SYNC_TIMEOUT)
    for t in threads:
        t.join(SYNC_TIMEOUT)
    services.vault.fault = lambda _s: None
    after = committer.stats()
    # the holding add's batch (of one) and exactly one batch of every add under test
    assert (after.batches - before.batches, after.jobs - before.jobs) == (2, len(adds) + 1)
    assert after.largest >= len(adds)
    assert all(o is not None for o in outcomes)
    return [o for o in outcomes if o is not None]


def _tenants(services: Any, *names: str) -> None:
    for name in names:
        services.tenants.create(name)


def _rows_of(services: Any, tenant: str, user: str) -> list[NoteRow]:
    with services.db.session(tenant) as sess:
        return list(
            sess.execute(
                select(NoteRow).where(NoteRow.tenant_id == tenant, NoteRow.user_id == user)
            ).scalars()
        )


def test_concurrent_adds_coalesce_and_each_writer_gets_exactly_its_own_note(
    make_services: ServicesFactory, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    services = make_services(backend)
    _tenants(services, "t1", "t2")
    # the same user and agent names in two tenants, so a mix-up across tenants would show
    scopes = [Scope(f"t{1 + i % 2}", f"u{i // 2}", "a") for i in range(8)]
    places = ["cellar", "attic", "garage", "shed", "porch", "kitchen", "garden", "hallway"]
    texts = [f"Writer {i} keeps the spare bicycle in the {p}" for i, p in enumerate(places)]
    outcomes = run_as_one_batch(services, list(zip(scopes, texts, strict=True)))
    notes = [o for o in outcomes if isinstance(o, Note)]
    assert len(notes) == len(scopes), [type(o).__name__ for o in outcomes]
    for scope, text, note in zip(scopes, texts, notes, strict=True):
        assert (note.tenant, note.user, note.agent, note.text) == (
            scope.tenant,
            scope.user,
            scope.agent,
            text,
        )
        view = services.vault.scoped(scope)
        assert view.get(note.id).text == text
        assert note.id in [h.note.id for h in view.search(text, mode="sparse")]
        assert note.id in [h.note.id for h in view.search(text, mode="dense")]
        other_tenant = Scope("t2" if scope.tenant == "t1" else "t1", scope.user, scope.agent)
        with pytest.raises(NotFound):
            services.vault.scoped(other_tenant).get(note.id)
        for other in (other_tenant, Scope(scope.tenant, scope.user + "x", scope.agent)):
            hits = services.vault.scoped(other).search(text, mode="sparse")
            assert note.id not in [h.note.id for h in hits]
    assert len({n.id for n in notes}) == len(notes)

    # Once more, counted: one embedding call, one upsert per namespace, one note-inserting
    # transaction per tenant (after the holding add's own call, upsert and transaction).
    calls: list[int] = []
    upserts: list[str] = []
    parts = services.vault.parts
    embed, upsert = parts.embedder.embed_scoped_documents, parts.index.upsert

    def counting_embed(items: Any) -> Any:
        calls.append(len(items))
        return embed(items)

    def counting_upsert(namespace: str, points: Any) -> None:
        upserts.append(namespace)
        upsert(namespace, points)

    monkeypatch.setattr(parts.embedder, "embed_scoped_documents", counting_embed)
    monkeypatch.setattr(parts.index, "upsert", counting_upsert)
    more: list[Note | BaseException] = []
    inserted = notes_inserted_per_transaction(  # counted by the database, in commit order
        services,
        backend,
        lambda: more.extend(
            run_as_one_batch(
                services,
                [(s, t.replace("bicycle", "ladder")) for s, t in zip(scopes, texts, strict=True)],
            )
        ),
    )
    assert all(isinstance(o, Note) for o in more)
    assert calls == [1, len(scopes)]
    namespaces = {services.vault.scoped(s).namespace for s in scopes}
    assert len(upserts) == 1 + 2 and set(upserts[1:]) == namespaces
    assert inserted == [1, 4, 4]  # the holding add, then one transaction per tenant


def test_a_lone_writer_runs_as_a_batch_of_one_and_never_waits(
    make_services: ServicesFactory, backend: str
) -> None:
    services = make_services(backend)
    _tenants(services, "t1")
    committer = services.vault.group_commit
    vault = services.vault.scoped(Scope("t1", "u1", "a1"))
    for text in ("The user's train leaves at nine", "The user prefers aisle seats"):
        vault.add(text)
    stats = committer.stats()
    assert (stats.batches, stats.jobs, stats.largest, stats.waits) == (2, 2, 1, 0)
    # a writer still preparing (counted in, not submitted) is worth the window: one wait
    with committer.arriving():
        vault.add("The user's passport expires in March")
    assert committer.stats().waits == 1
    vault.add("The user collects stamps from Iceland")  # alone again: no wait
    assert committer.stats().waits == 1 and committer.stats().batches == 4


class Poison(Exception):
    """Raised inside the transaction for one writer's rows only."""


def test_a_poisoned_job_fails_only_its_own_caller_and_leaves_no_row(
    make_services: ServicesFactory, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    services = make_services(backend)
    _tenants(services, "t1", "t2")
    real_params = group_commit.row_params

    def params(row: NoteRow, now: float) -> dict[str, Any]:
        if row.user_id == "mallory":  # fails wherever it runs, batched or alone
            raise Poison("refused")
        return real_params(row, now)

    monkeypatch.setattr(group_commit, "row_params", params)
    adds = [
        (Scope("t1", "alice", "a"), "Alice waters the ferns on Sundays"),
        (Scope("t1", "mallory", "a"), "Mallory parks in the visitor bay"),
        (Scope("t1", "bob", "a"), "Bob takes his coffee without sugar"),
        (Scope("t2", "carol", "a"), "Carol rehearses the cello at dawn"),
    ]
    outcomes = run_as_one_batch(services, adds)
    assert isinstance(outcomes[1], Poison)  # its own error, to its own caller only
    for (scope, text), outcome in zip(adds, outcomes, strict=True):
        if scope.user == "mallory":
            continue
        assert isinstance(outcome, Note), type(outcome).__name__
        assert outcome.text == text and outcome.user == scope.user
        assert outcome.id in [h.note.id for h in services.vault.scoped(scope).search(text)]
        assert len(_rows_of(services, scope.tenant, scope.user)) == 1
    assert _rows_of(services, "t1", "mallory") == []
    # its vector was indexed first: an orphan the reconciler removes, and nothing else
    report = services.reconciler.run(grace_seconds=0)
    assert report.orphans_deleted >= 1 and report.removed == 0 and report.completed == 0
    with services.db.session("t1") as sess:
        ids = set(sess.execute(select(NoteRow.id).where(NoteRow.tenant_id == "t1")).scalars())
    assert set(services.index.scroll_ids("t1", PointFilter())) == ids


def _one_batch_crashing_once(
    services: Any, adds: list[tuple[Scope, str]], step: str
) -> list[object]:
    """`run_as_one_batch` with a fault that raises `Crash` the first time `step` is reached
    (and never again); checks that it did crash."""
    crashed: list[str] = []

    def once(reached: str) -> None:
        if reached == step and not crashed:
            crashed.append(reached)
            raise Crash(reached)

    outcomes = run_as_one_batch(services, adds, then=once)
    assert crashed == [step]
    return list(outcomes)


def _assert_stored_once_and_found(services: Any, adds: list[tuple[Scope, str]]) -> None:
    """Each added text is one row of its user, and a sparse search for it finds that row."""
    for scope, text in adds:
        rows = _rows_of(services, "t1", scope.user)
        assert len(rows) == 1
        hits = services.vault.scoped(scope).search(text, mode="sparse")
        assert [h.note.id for h in hits] == [rows[0].id]


def _three_users_crashing_once(
    services: Any, text: str, words: str, step: str
) -> tuple[list[tuple[Scope, str]], list[object]]:
    """Users u0, u1 and u2 of tenant t1 each add `text` with one of `words`, as one batch that
    crashes the first time `step` is reached: the adds and their outcomes."""
    _tenants(services, "t1")
    adds = [(Scope("t1", f"u{i}", "a"), text.format(w)) for i, w in enumerate(words.split())]
    return adds, _one_batch_crashing_once(services, adds, step)


def test_a_batch_that_fails_once_is_retried_job_by_job(
    make_services: ServicesFactory, backend: str
) -> None:
    services = make_services(backend)
    adds, outcomes = _three_users_crashing_once(
        services, "Note {} of the retried batch", "north south east", "after_upsert"
    )
    assert all(isinstance(o, Note) for o in outcomes), [type(o).__name__ for o in outcomes]
    _assert_stored_once_and_found(services, adds)


def test_a_crash_after_a_batch_commits_is_reported_and_never_rerun(
    make_services: ServicesFactory, backend: str
) -> None:
    services = make_services(backend)
    adds, outcomes = _three_users_crashing_once(
        services, "Committed note {}", "amber cobalt scarlet", "after_commit"
    )
    assert all(isinstance(o, Crash) for o in outcomes)  # like the process dying after commit
    # Committed once, never inserted again (nor taken for a twin); its vector is still there.
    _assert_stored_once_and_found(services, adds)
    report = services.reconciler.run(grace_seconds=0)
    assert (report.completed, report.removed, report.orphans_deleted) == (0, 0, 0)


def test_group_commit_can_be_turned_off(
    make_services: ServicesFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMVAULT_GROUP_COMMIT", "false")
    monkeypatch.setenv("MEMVAULT_GROUP_COMMIT_WINDOW_MS", "2.5")
    services = make_services("sqlite")
    _tenants(services, "t1")
    committer = services.vault.group_commit
    assert committer.enabled is False and committer.window == pytest.approx(0.0025)

    def add(i: int) -> None:
        services.vault.scoped(Scope("t1", f"u{i}", "a")).add(f"Solo note number {i} here")

    errors = run_threads(add, 4, SYNC_TIMEOUT)
    assert errors == [] and committer.stats().batches == 0  # every add ran alone, unbatched
    with services.db.session("t1") as sess:
        count = sess.execute(select(func.count()).select_from(NoteRow)).scalar_one()
    assert count == 4


def test_scoped_embedding_makes_one_model_call_and_caches_per_scope(embedder: Embedder) -> None:
    calls: list[int] = []

    class Counting:
        model_id, dimension = embedder.model_id, embedder.dimension

        def embed_documents(self, texts: Any) -> Any:
            calls.append(len(texts))
            return embedder.embed_documents(texts)

        def embed_query(self, text: str) -> Any:
            return embedder.embed_query(text)

    cached = CachedEmbedder(Counting(), EmbeddingCache())  # type: ignore[arg-type]
    alice, bob = Scope("t1", "alice", "a"), Scope("t2", "bob", "a")
    out = cached.embed_scoped_documents([(alice, "tea"), (bob, "tea"), (alice, "coffee")])
    assert calls == [3] and out.shape == (3, embedder.dimension)
    assert (cached.count_scope("t1"), cached.count_scope("t2")) == (2, 1)
    again = cached.embed_documents(alice, ["coffee", "tea"])  # the same keys as a scope's call
    assert calls == [3]
    np.testing.assert_allclose(again, out[[2, 0]], atol=1e-6)


def test_one_batch_runs_at_a_time_and_every_job_gets_its_own_result() -> None:
    """Many writers at once, on the committer alone: never two leaders (two batches running
    together), every job answered with its own result, and no writer left waiting."""
    running = 0
    overlap = 0
    lock = threading.Lock()

    def run(payloads: Any) -> list[Any]:
        nonlocal running, overlap
        with lock:
            running += 1
            overlap = max(overlap, running)
        time.sleep(0.0005)
        with lock:
            running -= 1
        return [p * 10 for p in payloads]

    committer = group_commit.GroupCommitter(run, window_ms=0.2, max_batch=4)
    answers: dict[int, Any] = {}

    def writer(w: int) -> None:
        for n in range(40):
            job = w * 1000 + n
            with committer.arriving() as arrival:
                answers[job] = committer.submit(job, arrival)

    assert not run_threads(writer, 12, SYNC_TIMEOUT)  # none raised, none still running
    assert answers == {w * 1000 + n: (w * 1000 + n) * 10 for w in range(12) for n in range(40)}
    stats = committer.stats()
    assert overlap == 1 and stats.jobs == 480 and stats.largest <= 4
    assert stats.batches < 480  # writers did share batches

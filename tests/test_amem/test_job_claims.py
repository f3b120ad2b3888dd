"""An A-MEM job runs once at a time: the inline run holds a lease, a worker claims by
compare-and-set (the race: a worker polling while an add enriched its note inline evolved the
survivor twice and wrote two history entries for one absorbed note)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from memvault.amem.service import Amem
from memvault.amem.wiring import install
from memvault.runtime.factory import Services
from memvault.scope import Scope
from memvault.store.models import AmemJobRow
from tests.conftest import ServicesFactory

A = Scope("t1", "u1", "a1")
OLD = "The user wants to buy a Model 3"
NEW = "The user decided on the standard RWD Model 3"


@pytest.fixture
def services(make_services: ServicesFactory, backend: str) -> Services:
    return make_services(backend, amem=True)


def _count_runs(amem: Amem, monkeypatch: pytest.MonkeyPatch, *, poll_inside: bool) -> list[str]:
    """Record each enrichment; with `poll_inside`, a worker polls while each one runs."""
    runs: list[str] = []
    real = Amem.enrich

    def enrich(self: Amem, view: Any, note: Any) -> Any:
        runs.append(note.id)
        if poll_inside:
            assert amem.jobs is not None
            amem.jobs.run_due(view.scope.tenant)  # the worker's poll lands mid-run
        return real(self, view, note)

    monkeypatch.setattr(Amem, "enrich", enrich)
    return runs


def test_a_worker_polling_during_an_inline_run_leaves_the_job_alone(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    amem = install(services, worker=False, scheduler=False)
    view = services.vault.scoped(A)
    old = view.add(OLD)
    runs = _count_runs(amem, monkeypatch, poll_inside=True)
    new = view.add(NEW)
    assert runs == [new.id]  # enriched once, inline
    assert new.evolution is not None and new.evolution["action"] == "EVOLVE"
    older = view.get(old.id)
    assert older.relations == {"superseded_by": (new.id,)}  # one relation, written once
    with services.db.session("t1") as sess:
        assert sess.execute(select(AmemJobRow)).first() is None


def test_two_workers_never_run_one_job_twice(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    amem = install(services, worker=False, scheduler=False)
    assert amem.jobs is not None
    view = services.vault.scoped(A)
    note = view.add(OLD)
    amem.jobs.enqueue("t1", [(note.id, A.user, A.agent, A.agent)])  # queued again, unclaimed
    runs = _count_runs(amem, monkeypatch, poll_inside=True)
    assert amem.jobs.run_due("t1") == 1
    assert runs == [note.id]
    assert amem.jobs.pending("t1") == 0


def test_a_failed_inline_run_is_released_to_the_worker(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    amem = install(services, worker=False, scheduler=False)
    assert amem.jobs is not None
    real = Amem.enrich
    calls: list[str] = []

    def flaky(self: Amem, view: Any, note: Any) -> Any:
        calls.append(note.id)
        if len(calls) == 1:
            raise RuntimeError("the index was unavailable")
        return real(self, view, note)

    monkeypatch.setattr(Amem, "enrich", flaky)
    view = services.vault.scoped(A)
    note = view.add(OLD)
    assert note.enrichment == "pending"
    assert amem.jobs.run_due("t1") == 1  # due at once, not after the lease
    assert calls == [note.id, note.id]
    assert view.get(note.id).enrichment == "done"

"""An add leaves its inline A-MEM to the job worker while other adds are in flight (the
inline pipeline lengthened every concurrent add: 4x fewer adds/s under 8 HTTP clients). A lone
add, a deployment without a worker, and `amem_defer_when_busy=false` still run it inline."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from memvault.amem.service import Amem
from memvault.amem.wiring import install
from memvault.observability import REGISTRY
from memvault.runtime.factory import Services
from memvault.scope import Scope
from memvault.vault.notes import Note
from tests._helpers import poll_until
from tests.conftest import ServicesFactory

A = Scope("t1", "u1", "a1")
B = Scope("t1", "u2", "a1")
HELD = "The user wants to buy a Model 3"
OTHER = "The user's sister moved to Lisbon last spring"
WAIT = 30.0


@pytest.fixture
def services(make_services: ServicesFactory, backend: str) -> Services:
    made = make_services(backend, amem=True)
    made.tenants.create("t1")  # the worker visits the tenants that exist
    return made


def _with_an_add_in_flight(
    services: Services, monkeypatch: pytest.MonkeyPatch, then: Callable[[], Note]
) -> tuple[Note, Note]:
    """Hold an add of `HELD` inside its inline A-MEM run while `then()` adds; both notes."""
    entered, release = threading.Event(), threading.Event()
    real = Amem.enrich

    def held(self: Amem, view: Any, note: Any) -> Any:
        if note.text == HELD:
            entered.set()
            assert release.wait(WAIT)
        return real(self, view, note)

    monkeypatch.setattr(Amem, "enrich", held)
    first: list[Note] = []
    thread = threading.Thread(target=lambda: first.append(services.vault.scoped(A).add(HELD)))
    thread.start()
    try:
        assert entered.wait(WAIT)
        assert services.vault.adds_in_flight.count == 1
        second = then()
    finally:
        release.set()
        thread.join(WAIT)
    assert services.vault.adds_in_flight.count == 0
    return first[0], second


def _jobs() -> dict[str, float]:
    """The process's `memvault_amem_jobs_total` by event."""
    events = ("inline", "queued", "done", "failed")
    found = {e: REGISTRY.get_sample_value("memvault_amem_jobs_total", {"event": e}) for e in events}
    return {e: v or 0.0 for e, v in found.items()}


def _grew(before: dict[str, float]) -> dict[str, float]:
    after = _jobs()
    return {e: after[e] - before[e] for e in after if after[e] != before[e]}


def _until(check: Callable[[], bool]) -> bool:
    return poll_until(check, WAIT, step=0.05)


def test_an_add_while_another_is_in_flight_leaves_its_amem_to_the_worker(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    amem = install(services, scheduler=False)  # with its worker
    assert amem.jobs is not None
    view = services.vault.scoped(B)
    before = _jobs()
    first, second = _with_an_add_in_flight(services, monkeypatch, lambda: view.add(OTHER))
    assert first.enrichment == "done"  # it was alone when it decided: inline
    assert second.enrichment == "pending" and second.evolution is None
    assert _until(lambda: view.get(second.id).enrichment == "done")  # the worker ran it
    assert amem.jobs.pending("t1") == 0
    # the backlog is visible on /metrics: one job left to the worker, and both finished
    assert _until(lambda: _grew(before) == {"inline": 1, "queued": 1, "done": 2})


def test_a_lone_add_still_runs_inline_with_a_worker(services: Services) -> None:
    amem = install(services, scheduler=False)
    view = services.vault.scoped(A)
    view.add(HELD)
    before = _jobs()
    note = view.add("The user decided on the standard RWD Model 3")
    assert _grew(before) == {"inline": 1, "done": 1}
    assert note.enrichment == "done"
    assert note.evolution is not None and note.evolution["action"] == "EVOLVE"
    assert amem.jobs is not None and amem.jobs.pending("t1") == 0


def test_without_a_worker_a_busy_add_runs_inline(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(services, worker=False, scheduler=False)  # nobody would run a deferred job
    _, second = _with_an_add_in_flight(
        services, monkeypatch, lambda: services.vault.scoped(B).add(OTHER)
    )
    assert second.enrichment == "done"


def test_the_setting_off_keeps_a_busy_add_inline(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = services.settings.model_copy(update={"amem_defer_when_busy": False})
    monkeypatch.setattr(services, "settings", settings)
    amem = install(services, scheduler=False)
    assert amem.defer_when_busy is False
    _, second = _with_an_add_in_flight(
        services, monkeypatch, lambda: services.vault.scoped(B).add(OTHER)
    )
    assert second.enrichment == "done"

"""An erase job never ends `done` with `verified: false`: a verify that finds something left
(here a data key minted for the erased scope after the shred, as a worker that had not seen the
block would) goes round revoke, shred, vectors, rows and scrub again; a resumed job re-runs
revoke and shred; the reason a run stopped is shown on the job."""

from __future__ import annotations

from typing import Any

import pytest

from memvault.compliance import erasure_steps as erasure_module
from memvault.compliance.wiring import install
from memvault.runtime.factory import Services
from memvault.scope import Scope
from tests.conftest import ServicesFactory

USER = "usrqzretry"


def _seed(services: Services) -> None:
    services.tenants.create("t1")
    for user in (USER, "usrqzother"):
        services.vault.scoped(Scope("t1", user, "a1")).add(f"{user} waters the basil at dawn")


def test_a_key_minted_after_the_shred_is_shredded_before_the_receipt(
    make_services: ServicesFactory, backend: str
) -> None:
    services = make_services(backend)
    _seed(services)
    jobs = install(services).erasures
    minted: list[str] = []

    def late_writer(point: str) -> None:
        if point == "before:verify" and not minted:
            minted.append(point)  # a stale worker's key for the erased scope
            services.keyring.aead_for(Scope("t1", USER, "a9"))

    jobs.fault = late_writer
    job_id = jobs.start("t1", USER, None, "admin")
    receipt = jobs.run("t1", job_id)
    assert minted
    assert receipt["receipt"]["verified"] is True
    assert services.keyring.count_keys("t1", USER) == 0
    assert receipt["receipt"]["keys_destroyed"] >= 2


def test_a_job_that_cannot_verify_stays_running_and_says_why(
    make_services: ServicesFactory, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    services = make_services(backend)
    _seed(services)
    jobs = install(services).erasures
    real = erasure_module.inventory.remaining

    def stuck(services_: Any, subject: Any) -> dict[str, int]:
        counts = real(services_, subject)
        counts["links"] = counts.get("links", 0) + 1  # something the erase cannot remove
        return counts

    monkeypatch.setattr(erasure_module.inventory, "remaining", stuck)
    job_id, receipt = jobs.submit("t1", USER, None, "admin", wait=30)
    assert receipt is None
    view = jobs.view("t1", job_id)
    assert view["state"] == "running"
    assert "links=1" in (view["last_error"] or "")
    assert view["attempts"] >= 1
    monkeypatch.setattr(erasure_module.inventory, "remaining", real)
    done = jobs.run("t1", job_id)  # the sweeper's retry
    assert done["receipt"]["verified"] is True

"""The reconciler and the index upgrade check handle a dedicated agent's partition: an orphan
left there by a crashed add is found through the user's mark, and a staged update is finished
into the same partition. Both backends (Edge)."""

from __future__ import annotations

import pytest

from memvault.compliance.index_upgrade import needs_upgrade
from memvault.index.base import PointFilter
from memvault.runtime.factory import Services
from memvault.scope import Scope
from memvault.vault.drafts import dedicated_tag, user_tag
from tests.conftest import ServicesFactory
from tests.faults import Crash, crash_at

T, U = "t1", "u1"
FLIGHT = "The user's flight to Lisbon leaves at seven"


def _count(services: Services, agent: str | None = None) -> int:
    tag = services.keyring.index_key(T).tag
    key = user_tag(tag, U) if agent is None else dedicated_tag(tag, U, agent)
    return services.index.count(T, PointFilter(user_id=key))


@pytest.fixture
def services(make_services: ServicesFactory, backend: str) -> Services:
    services = make_services(backend)
    services.tenants.create(T)
    services.keys.issue(T, U, "sandbox", "agent", "dedicated")
    return services


def test_an_orphan_in_a_dedicated_partition_is_deleted(services: Services) -> None:
    vault = services.vault.scoped(Scope(T, U, "sandbox"))  # looked up: Mode B
    assert vault.dedicated
    services.vault.fault = crash_at("after_upsert")
    with pytest.raises(Crash):
        vault.add(FLIGHT)
    services.vault.fault = lambda _s: None
    assert (_count(services, "sandbox"), _count(services)) == (1, 0)
    report = services.reconciler.run(grace_seconds=0)
    assert report.orphans_deleted == 1
    assert _count(services, "sandbox") == 0


def test_a_staged_update_is_finished_in_the_dedicated_partition(services: Services) -> None:
    vault = services.vault.scoped(Scope(T, U, "sandbox"))
    note = vault.add(FLIGHT)
    services.vault.fault = crash_at("after_stage")
    with pytest.raises(Crash):
        vault.update(note.id, text="The user's flight to Porto leaves at nine")
    services.vault.fault = lambda _s: None
    report = services.reconciler.run(grace_seconds=0)
    assert report.updates_completed == 1
    assert (_count(services, "sandbox"), _count(services)) == (1, 0)
    hits = vault.search("flight to Porto", mode="sparse")
    assert [h.note.id for h in hits] == [note.id] and "Porto" in hits[0].note.text
    assert not needs_upgrade(services, T)  # its points carry the partition tag it expects

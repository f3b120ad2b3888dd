"""Retention: an expired note is gone from every read path the moment it expires (no sweep
needed), per-type TTL defaults from the tenant policy, and the sweeper that purges expired notes
(rows, links, corpus statistics, vectors), compacts the index and audits the count."""

from __future__ import annotations

import json
import logging

import pytest
from sqlalchemy import func, select, update

from memvault.compliance.retention import RetentionSweeper, retention_sweeper
from memvault.errors import NotFound
from memvault.runtime.factory import Services
from memvault.scope import Scope
from memvault.store.models import CorpusStatsRow, LinkRow, NoteRow
from memvault.vault.drafts import namespace_for
from memvault.vault.retrieve import SEARCH_MODES
from memvault.vault.service import ScopedVault
from tests._helpers import FakeClock
from tests.apiclient import Api
from tests.conftest import ServicesFactory

DAY = 86_400.0

HOUSE_KEY = "The user keeps the spare house key in the kitchen drawer"
CAR_KEY = "The user keeps the spare car key in the kitchen drawer as well"
SHEARS = "The garden shears hang on the wall of the wooden shed"
ROSES = "The roses in the front garden bloom early every spring"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def services(make_services: ServicesFactory, backend: str, clock: FakeClock) -> Services:
    built = make_services(backend)
    built.vault.parts.clock = clock
    for tenant in ("acme", "globex"):
        built.tenants.create(tenant)
    return built


def view(services: Services, user: str = "alice", agent: str = "planner") -> ScopedVault:
    return services.vault.scoped(Scope("acme", user, agent))


def ids_of_search(vault: ScopedVault, query: str, mode: str, limit: int = 5) -> set[str]:
    return {hit.note.id for hit in vault.search(query, limit=limit, mode=mode)}


def read_paths(vault: ScopedVault, note_id: str, text: str) -> dict[str, bool]:
    """Whether each read path returns the note (True) or not (False)."""
    seen: dict[str, bool] = {}
    try:
        seen["get"] = vault.get(note_id).id == note_id
    except NotFound:
        seen["get"] = False
    notes, _total = vault.list_notes(limit=100)
    seen["list"] = note_id in {n.id for n in notes}
    for mode in SEARCH_MODES:
        seen[f"search_{mode}"] = note_id in ids_of_search(vault, text, mode)
    seen["readable_ids"] = vault.readable_ids([note_id]) == {note_id}
    return seen


def test_every_read_path_drops_a_note_the_moment_it_expires(
    services: Services, clock: FakeClock
) -> None:
    alice = view(services)
    expiring = alice.add(HOUSE_KEY, ttl_days=1)
    other = alice.add(SHEARS)
    shared = alice.add(ROSES, visibility="shared", ttl_days=1)
    coach = view(services, agent="coach")  # reads the shared note only
    assert expiring.expires_at is not None and shared.expires_at is not None
    assert expiring.expires_at == pytest.approx(clock.now + DAY)

    clock.now = expiring.expires_at - 1
    assert all(read_paths(alice, expiring.id, HOUSE_KEY).values())
    assert all(read_paths(coach, shared.id, ROSES).values())
    clock.now = expiring.expires_at  # expired from this instant on, before any sweep
    after = read_paths(alice, expiring.id, HOUSE_KEY)
    assert not any(after.values()), after
    assert not any(read_paths(coach, shared.id, ROSES).values())
    notes, total = alice.list_notes()
    assert [n.id for n in notes] == [other.id] and total == 1
    with services.db.session("acme") as sess:  # still stored: only the sweep deletes
        assert sess.get(NoteRow, ("acme", expiring.id)) is not None


def test_the_graph_walk_stops_admitting_an_expired_neighbour(
    services: Services, clock: FakeClock
) -> None:
    alice = view(services)
    house = alice.add(HOUSE_KEY)
    car = alice.add(CAR_KEY, ttl_days=2)
    alice.link(house.id, car.id)
    query = "where is the spare house key"

    def walked() -> dict[str, str]:
        return {h.note.id: h.via for h in alice.search(query, limit=1, mode="full")}

    before = walked()
    assert before.get(house.id) == "search" and before.get(car.id) == "graph", before
    clock.now += 2 * DAY
    assert walked() == {house.id: "search"}
    assert alice.readable_ids([house.id, car.id]) == {house.id}


def test_writes_on_an_expired_note_are_404_and_its_duplicate_is_stored_anew(
    services: Services, clock: FakeClock
) -> None:
    alice = view(services)
    expiring = alice.add(HOUSE_KEY, ttl_days=1)
    other = alice.add(SHEARS)
    assert alice.add(HOUSE_KEY).id == expiring.id  # a live duplicate: "already stored"
    assert alice.update(expiring.id, topics=["keys"]).topics == ("keys",)
    alice.link(other.id, expiring.id)
    clock.now += DAY
    with pytest.raises(NotFound):
        alice.update(expiring.id, text="The user keeps the spare key in the hall drawer")
    with pytest.raises(NotFound):
        alice.link(other.id, expiring.id)
    with pytest.raises(NotFound):
        alice.link(expiring.id, other.id)
    with pytest.raises(NotFound):
        alice.delete(expiring.id)
    with pytest.raises(NotFound):
        alice.delete(expiring.id, purge=True)
    again = alice.add(HOUSE_KEY)  # the expired copy is not "already stored"
    assert again.id != expiring.id and again.expires_at is None
    assert alice.get(again.id).text == HOUSE_KEY


def test_policy_ttl_defaults_per_note_type_and_explicit_ttl_wins(
    make_services: ServicesFactory, backend: str, clock: FakeClock
) -> None:
    api = Api(make_services(backend))
    api.services.vault.parts.clock = clock
    admin = api.tenant("acme")
    policy = {"ttl_days": {"memory": 2, "knowledge": None}}
    r = api.call("PUT", "/v1/admin/policy", admin, json=policy)
    assert r.status_code == 200, r.text
    assert api.call("GET", "/v1/admin/policy", admin).json()["ttl_days"] == {
        "memory": 2.0,
        "knowledge": None,
    }
    (event,) = [e for e in api.services.audit.events("acme") if e["action"] == "policy.set"]
    assert event["details"]["ttl_seconds"] == {"memory": 2 * 86_400, "knowledge": None}
    key = api.agent_key("acme", "alice", "planner")
    alice = api.services.vault.scoped(Scope("acme", "alice", "planner"))
    memory = api.add(key, HOUSE_KEY)
    knowledge = api.add(key, SHEARS, note_type="knowledge", topics=["garden"])
    explicit = api.add(key, ROSES, ttl_days=5)
    start = clock.now
    assert alice.get(memory["id"]).expires_at == pytest.approx(start + 2 * DAY)
    assert alice.get(knowledge["id"]).expires_at is None
    assert alice.get(explicit["id"]).expires_at == pytest.approx(start + 5 * DAY)

    policy = {"ttl_days": {"memory": 10, "knowledge": 1}}
    assert api.call("PUT", "/v1/admin/policy", admin, json=policy).status_code == 200
    later = api.add(key, CAR_KEY)
    assert alice.get(later["id"]).expires_at == pytest.approx(start + 10 * DAY)
    # New writes only: the notes already stored keep the expiry they were written with.
    assert alice.get(memory["id"]).expires_at == pytest.approx(start + 2 * DAY)
    assert alice.get(knowledge["id"]).expires_at is None

    clock.now = start + 2 * DAY
    assert api.call("GET", f"/v1/memories/{memory['id']}", key).status_code == 404
    assert api.call("GET", f"/v1/memories/{knowledge['id']}", key).status_code == 200
    assert api.call("GET", f"/v1/memories/{later['id']}", key).status_code == 200


@pytest.mark.parametrize(
    "ttl",
    [{"memory": 0}, {"memory": -1}, {"memory": 36_501}, {"other": 3}, {"memory": "30"}],
)
def test_policy_ttl_defaults_are_bounded(make_services: ServicesFactory, ttl: object) -> None:
    api = Api(make_services("sqlite"))
    admin = api.tenant("acme")
    r = api.call("PUT", "/v1/admin/policy", admin, json={"ttl_days": ttl})
    assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_request"
    assert api.call("GET", "/v1/admin/policy", admin).json()["ttl_days"] == {
        "memory": None,
        "knowledge": None,
    }


def counts(services: Services, tenant: str) -> tuple[int, int, int]:
    """(notes rows, links rows, corpus document count) of a tenant."""
    with services.db.session(tenant) as sess:
        notes = sess.execute(
            select(func.count()).select_from(NoteRow).where(NoteRow.tenant_id == tenant)
        ).scalar_one()
        links = sess.execute(
            select(func.count()).select_from(LinkRow).where(LinkRow.tenant_id == tenant)
        ).scalar_one()
        docs = sess.execute(
            select(func.sum(CorpusStatsRow.doc_count)).where(CorpusStatsRow.tenant_id == tenant)
        ).scalar_one()
    return int(notes), int(links), int(docs or 0)


def points(services: Services, tenant: str, ids: list[str]) -> set[str]:
    return {hit.id for hit in services.index.retrieve(namespace_for(tenant), ids)}


def audit_events(services: Services, tenant: str, action: str) -> list[dict[str, object]]:
    return [e for e in services.audit.events(tenant) if e["action"] == action]


def test_sweeper_purges_rows_links_statistics_and_vectors_and_audits(
    services: Services, clock: FakeClock
) -> None:
    alice = view(services)
    keep = alice.add(SHEARS)
    private = alice.add(HOUSE_KEY, ttl_days=1)
    shared = alice.add(ROSES, visibility="shared", ttl_days=1)
    alice.link(keep.id, private.id)
    alice.link(shared.id, keep.id)
    bob = services.vault.scoped(Scope("globex", "bob", "planner"))
    theirs = bob.add(CAR_KEY, ttl_days=3)
    ids = [keep.id, private.id, shared.id]
    sweep = retention_sweeper(services)

    assert sweep() == 0  # nothing expired yet
    assert counts(services, "acme") == (3, 2, 3) and points(services, "acme", ids) == set(ids)
    clock.now += DAY
    assert sweep() == 2
    assert counts(services, "acme") == (1, 0, 1)
    assert points(services, "acme", ids) == {keep.id}
    assert points(services, "globex", [theirs.id]) == {theirs.id}  # not expired there
    assert [h.note.id for h in alice.search(SHEARS, mode="hybrid")] == [keep.id]
    (event,) = audit_events(services, "acme", "note.expired")
    assert event["actor"] == "system" and event["details"] == {"count": 2}
    assert private.id not in json.dumps(event) and shared.id not in json.dumps(event)
    assert audit_events(services, "globex", "note.expired") == []

    assert sweep() == 0  # nothing left: no new event either
    assert len(audit_events(services, "acme", "note.expired")) == 1
    clock.now += 2 * DAY
    assert sweep() == 1 and counts(services, "globex") == (0, 0, 0)
    assert audit_events(services, "globex", "note.expired")[0]["details"] == {"count": 1}


def test_sweeper_compacts_each_swept_namespace(services: Services, clock: FakeClock) -> None:
    alice = view(services)
    alice.add(HOUSE_KEY, ttl_days=1)
    sweeper = RetentionSweeper(services.vault, services.index, services.audit)
    clock.now += DAY
    assert sweeper() == 1
    # only tenants with an expired note are visited (globex has none)
    assert [(r.tenant, r.purged) for r in sweeper.last] == [("acme", 1)]
    [acme] = sweeper.last
    assert acme.compacted >= 1  # the Edge partition was rewritten
    assert services.index.compact(namespace_for("acme")) == 0  # nothing left to compact


def test_sweeper_works_in_bounded_batches(services: Services, clock: FakeClock) -> None:
    alice = view(services)
    words = ["apples", "pears", "plums", "cherries", "grapes"]
    for word in words:
        alice.add(f"The user bought fresh {word} at the market on the corner", ttl_days=1)
    sweeper = RetentionSweeper(
        services.vault, services.index, services.audit, batch=2, max_batches=1
    )
    clock.now += DAY
    assert [sweeper(), sweeper(), sweeper(), sweeper()] == [2, 2, 1, 0]
    assert counts(services, "acme") == (0, 0, 0)


def test_sweeper_logs_a_bad_row_by_id_and_purges_the_rest(
    services: Services, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    alice = view(services)
    bad = alice.add(HOUSE_KEY, ttl_days=1)
    good = alice.add(SHEARS, ttl_days=1)
    with services.db.session("acme") as sess:  # an owner no scope can be built from
        sess.execute(update(NoteRow).where(NoteRow.id == bad.id).values(owner="bad owner!"))
    clock.now += DAY
    with caplog.at_level(logging.ERROR, logger="memvault.compliance.retention"):
        assert retention_sweeper(services)() == 1
    assert bad.id in caplog.text and "kitchen" not in caplog.text
    with services.db.session("acme") as sess:
        assert sess.get(NoteRow, ("acme", bad.id)) is not None
        assert sess.get(NoteRow, ("acme", good.id)) is None
    (event,) = audit_events(services, "acme", "note.expired")
    assert event["details"] == {"count": 1, "failed": 1}

"""An absorbed note's point stays searchable as an alias of its survivor (issue 9).

A-MEM folds a note into another of its scope (`ScopedVault.absorb`): the absorbed note is
soft-deleted, and a search that matches its point returns the survivor, re-checked in SQL like
any hit. The absorbed note itself is never returned again, and an alias never widens what a
caller can read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memvault.errors import Absorbed, InvalidRequest, NotFound
from memvault.scope import Scope
from memvault.vault.factory import Services
from memvault.vault.index.base import Hit
from memvault.vault.retrieve import SEARCH_MODES, follow_aliases
from tests.apiclient import Api
from tests.conftest import ServicesFactory

ABSORBED = "Priya's violin teacher moved her lessons to Thursday evenings at the conservatory"
SURVIVOR = "Quarterly tax filing for the bakery is due at the end of the month"
OTHER = "The garden shed needs a new padlock before the winter storms arrive"


@pytest.fixture
def services(make_services: ServicesFactory, backend: str) -> Services:
    """A vault on each backend with tenant t1."""
    built = make_services(backend)
    built.tenants.create("t1")
    return built


def test_follow_aliases_maps_to_the_survivor_once_at_its_best_rank() -> None:
    hits = [
        Hit("x", 0.9, {"alias_of": "s"}),
        Hit("a", 0.8, {}),
        Hit("s", 0.7, {}),
        Hit("y", 0.6, {"alias_of": "a"}),
        Hit("b", 0.5, {"alias_of": ""}),  # malformed: the hit stands for itself
    ]
    out = follow_aliases(hits)
    assert [(h.id, h.score) for h in out] == [("s", 0.9), ("a", 0.8), ("b", 0.5)]


@pytest.mark.parametrize("mode", SEARCH_MODES)
def test_a_search_matching_an_absorbed_note_returns_its_survivor(
    services: Services, mode: str
) -> None:
    view = services.vault.scoped(Scope("t1", "alice", "planner"))
    survivor = view.add(SURVIVOR)
    absorbed = view.add(ABSORBED)
    view.add(OTHER)
    before = view.search(ABSORBED, limit=1, mode=mode)
    assert [h.note.id for h in before] == [absorbed.id]

    view.absorb(absorbed.id, survivor.id)

    hits = view.search(ABSORBED, limit=3, mode=mode)
    ids = [h.note.id for h in hits]
    assert ids[0] == survivor.id  # the survivor ranks where the absorbed note did
    if mode != "full":  # the same point matched (full mode's heat moves with the hits)
        assert hits[0].score == pytest.approx(before[0].score, abs=1e-6)
    assert absorbed.id not in ids
    assert len(ids) == len(set(ids))
    with pytest.raises(NotFound):
        view.get(absorbed.id)


def test_an_alias_never_returns_a_survivor_the_caller_cannot_read(services: Services) -> None:
    planner = services.vault.scoped(Scope("t1", "alice", "planner"))
    coder = services.vault.scoped(Scope("t1", "alice", "coder"))
    survivor = planner.add(SURVIVOR)  # the planner's alone
    absorbed = planner.add(ABSORBED, readers=["coder"])  # the coder could read this one
    assert [h.note.id for h in coder.search(ABSORBED, limit=3)] == [absorbed.id]

    planner.absorb(absorbed.id, survivor.id)

    assert coder.search(ABSORBED, limit=3) == []  # the alias leads to a note it cannot read
    assert planner.search(ABSORBED, limit=1)[0].note.id == survivor.id


def test_an_alias_of_a_purged_survivor_returns_nothing(services: Services) -> None:
    view = services.vault.scoped(Scope("t1", "alice", "planner"))
    survivor = view.add(SURVIVOR)
    absorbed = view.add(ABSORBED)
    view.absorb(absorbed.id, survivor.id)
    view.delete(survivor.id, purge=True)
    assert view.search(ABSORBED, limit=3, mode="dense") == []


def test_absorb_stays_inside_one_storage_scope(services: Services) -> None:
    planner = services.vault.scoped(Scope("t1", "alice", "planner"))
    mine = planner.add(ABSORBED)
    shared = planner.add(SURVIVOR, visibility="shared")
    with pytest.raises(InvalidRequest):
        planner.absorb(mine.id, shared.id)
    with pytest.raises(InvalidRequest):
        planner.absorb(mine.id, mine.id)
    bob = services.vault.scoped(Scope("t1", "bob", "planner"))
    bobs = bob.add(SURVIVOR)
    with pytest.raises(NotFound):  # another user's note does not exist for the caller
        planner.absorb(mine.id, bobs.id)
    assert planner.get(mine.id).id == mine.id  # nothing changed


@pytest.mark.parametrize("mode", ["dense", "full"])
def test_absorbing_a_survivor_moves_its_aliases_to_the_new_survivor(
    services: Services, mode: str
) -> None:
    """B folded into A, then A into C (a late A-MEM job, or consolidation): B's point leads to C,
    not to A, which is gone too (an alias chain would drop B from every search)."""
    view = services.vault.scoped(Scope("t1", "alice", "planner"))
    oldest = view.add(SURVIVOR)
    middle = view.add(OTHER)
    newest = view.add(ABSORBED)
    view.absorb(newest.id, middle.id)
    view.absorb(middle.id, oldest.id)

    hits = view.search(ABSORBED, limit=3, mode=mode)
    assert [h.note.id for h in hits][:1] == [oldest.id]
    assert {middle.id, newest.id}.isdisjoint(h.note.id for h in hits)
    [point] = services.index.retrieve(view.namespace, [newest.id])
    assert point.payload["alias_of"] == oldest.id
    for gone in (newest, middle):  # a GET names where the text is now, not the middle note
        with pytest.raises(Absorbed) as absorbed:
            view.get(gone.id)
        assert absorbed.value.survivor_id == oldest.id


class _Crash(Exception):
    """Stands for the process dying at that point: nothing after it runs."""


def _cut_absorb(services: Services, monkeypatch: pytest.MonkeyPatch, writes: int) -> None:
    """Make the next absorb stop, as a crash would, after `writes` of its index writes (the
    aliases moved, then its own point); after both, at its row's transaction."""
    done: list[int] = []
    write, session = services.index.set_payload, services.db.session

    def cut_write(*args: Any, **kwargs: Any) -> Any:
        if len(done) == writes:
            raise _Crash
        done.append(1)
        return write(*args, **kwargs)

    def cut_session(*args: Any, **kwargs: Any) -> Any:
        if len(done) == 2:
            raise _Crash
        return session(*args, **kwargs)

    monkeypatch.setattr(services.index, "set_payload", cut_write)
    monkeypatch.setattr(services.db, "session", cut_session)


@pytest.mark.parametrize("writes", [0, 1, 2])
def test_an_absorb_cut_short_leaves_every_text_findable_and_a_retry_finishes_it(
    make_services: ServicesFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, writes: int
) -> None:
    """A crash inside an absorb, between its steps, then a restart: every absorbed text still
    leads to a live note, from its own point (the same score), and the retried absorb, as
    A-MEM's job runs it again, finishes. Were the row soft-deleted first, a crash before the
    index writes would leave the middle note's point and its alias leading to a deleted note,
    and the retry would find no note to absorb."""
    root = tmp_path / "store"
    services = make_services(data_dir=root)
    services.tenants.create("t1")
    view = services.vault.scoped(Scope("t1", "alice", "planner"))
    oldest, middle = view.add(SURVIVOR), view.add(OTHER)
    newest = view.add(ABSORBED)
    view.absorb(newest.id, middle.id)
    scores = {text: view.search(text, limit=1, mode="dense")[0].score for text in (ABSORBED, OTHER)}

    _cut_absorb(services, monkeypatch, writes)
    with pytest.raises(_Crash):
        view.absorb(middle.id, oldest.id)
    monkeypatch.undo()
    services.close()

    reopened = make_services(data_dir=root)
    view = reopened.vault.scoped(Scope("t1", "alice", "planner"))
    for text in (ABSORBED, OTHER):
        [hit] = view.search(text, limit=1, mode="dense")
        assert hit.note.id in (middle.id, oldest.id)
        assert hit.score == pytest.approx(scores[text], abs=1e-6)  # its own point led there
    assert view.get(middle.id).id == middle.id  # not absorbed until its row says so

    view.absorb(middle.id, oldest.id)  # the retry

    with pytest.raises(NotFound):
        view.get(middle.id)
    for text in (ABSORBED, OTHER):
        [hit] = view.search(text, limit=1, mode="dense")
        assert (hit.note.id, hit.score) == (oldest.id, pytest.approx(scores[text], abs=1e-6))
    points = reopened.index.retrieve(view.namespace, [newest.id, middle.id])
    assert {p.id: p.payload["alias_of"] for p in points} == {
        newest.id: oldest.id,
        middle.id: oldest.id,
    }


def test_get_of_an_absorbed_note_names_its_survivor_only_to_who_may_read_it(
    services: Services,
) -> None:
    """`get` of a note A-MEM merged away raises `Absorbed` (a NotFound) naming the survivor,
    when the caller may read the survivor now; any other missing id stays a plain NotFound."""
    planner = services.vault.scoped(Scope("t1", "alice", "planner"))
    coder = services.vault.scoped(Scope("t1", "alice", "coder"))
    bob = services.vault.scoped(Scope("t1", "bob", "planner"))
    survivor = planner.add(SURVIVOR)
    absorbed = planner.add(ABSORBED, readers=["coder"])  # the coder may read this one only
    deleted = planner.add(OTHER)
    planner.absorb(absorbed.id, survivor.id)
    planner.delete(deleted.id)

    with pytest.raises(Absorbed) as found:
        planner.get(absorbed.id)
    assert found.value.survivor_id == survivor.id
    assert planner.get(found.value.survivor_id).text == survivor.text
    for view, note_id in ((coder, absorbed.id), (bob, absorbed.id), (planner, deleted.id)):
        with pytest.raises(NotFound) as plain:
            view.get(note_id)
        assert type(plain.value) is NotFound  # no survivor named: unreadable, or none
    planner.delete(survivor.id, purge=True)
    with pytest.raises(NotFound) as gone:
        planner.get(absorbed.id)
    assert type(gone.value) is NotFound


def test_the_api_answers_an_absorbed_note_with_404_absorbed_and_its_location(
    make_services: ServicesFactory,
) -> None:
    api = Api(make_services())
    key = api.agent_key("t1", "alice", "planner")
    survivor, absorbed = api.add(key, SURVIVOR), api.add(key, ABSORBED)
    api.services.vault.scoped(Scope("t1", "alice", "planner")).absorb(
        absorbed["id"], survivor["id"]
    )

    r = api.call("GET", f"/v1/memories/{absorbed['id']}", key)
    assert r.status_code == 404
    assert r.json()["error"]["code"] == "absorbed"
    assert survivor["id"] in r.json()["error"]["message"]
    assert r.headers["location"] == f"/v1/memories/{survivor['id']}"
    assert api.call("GET", r.headers["location"], key).json()["text"] == SURVIVOR
    other = api.call("GET", f"/v1/memories/{absorbed['id']}", api.agent_key("t1", "bob", "x"))
    assert other.status_code == 404 and other.json()["error"]["code"] == "not_found"
    assert "location" not in other.headers

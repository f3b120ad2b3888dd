"""After an erase, a purge or a deletion, no file under the data directory holds what went.

Every file under the data dir (SQLite data store and keystore with their WAL files, every Edge
shard file: segments, mmaps, WAL, payload storage) is read as bytes and searched for:
- the removed notes' ids, as canonical strings and as 16-byte UUIDs;
- the erased user's id in clear;
- the exact float32 bytes of each removed note's embedding, as the embedder returned it and as
  the store keeps it (unit-normalised for cosine).

Each scan has a positive control: before the removal the same search finds the needles, so
the scan would fail if the removal left them.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pytest

from memvault.compliance.wiring import install
from memvault.runtime.factory import Services
from memvault.scope import Scope
from tests.conftest import ServicesFactory
from tests.disk_scan import files_holding

VICTIM = "usrqzvictim"
KEEPER = "usrqzkeeper"
TOPICS = ("lighthouse", "orchard", "glacier", "harbour", "meadow", "canyon")


def _texts(owner: str, agent: str) -> list[str]:
    return [
        f"{owner} {agent} remembers the {topic} trip and the {word} they brought along"
        for topic in TOPICS
        for word in ("lantern", "compass")
    ]


def _vector_needles(services: Services, scope: Scope, texts: list[str]) -> list[bytes]:
    raw = np.asarray(services.vault.parts.embedder.embed_documents(scope, texts), np.float32)
    unit = raw / np.linalg.norm(raw, axis=1, keepdims=True).astype(np.float32)
    return [v.tobytes() for v in raw] + [v.astype(np.float32).tobytes() for v in unit]


def _id_needles(ids: Iterable[str]) -> list[bytes]:
    out: list[bytes] = []
    for note_id in ids:
        out += [note_id.encode(), uuid.UUID(note_id).bytes]
    return out


def _found(root: Path, needles: list[bytes]) -> list[str]:
    return [f"{path.relative_to(root)}#{i}" for path, i in files_holding(root, needles)]


class World:
    """Two users of one tenant (the victim with two agents and a shared note, a keeper)."""

    def __init__(self, services: Services, root: Path) -> None:
        self.services, self.root = services, root
        self.ids: dict[tuple[str, str], list[str]] = {}
        self.vectors: dict[tuple[str, str], list[bytes]] = {}
        services.tenants.create("t1")  # the sweepers walk registered tenants
        for user in (VICTIM, KEEPER):
            for agent in ("a1", "a2"):
                scope = Scope("t1", user, agent)
                view = services.vault.scoped(scope)
                texts = _texts(user, agent)
                self.ids[(user, agent)] = [view.add(t).id for t in texts]
                self.vectors[(user, agent)] = _vector_needles(services, scope, texts)
            shared = services.vault.scoped(Scope("t1", user, "a1"))
            note = shared.add(f"{user} shares the quiet lagoon story", visibility="shared")
            self.ids[(user, "shared")] = [note.id]
            shared.link(self.ids[(user, "a1")][0], self.ids[(user, "a1")][1])

    def needles(self, user: str, agents: Iterable[str]) -> tuple[list[bytes], list[bytes]]:
        ids = [i for a in agents for i in self.ids[(user, a)]]
        vectors = [v for a in agents if (user, a) in self.vectors for v in self.vectors[(user, a)]]
        return _id_needles(ids), vectors

    def flush(self) -> None:
        self.services.vault.parts.retrievals.flush()
        self.services.index.flush()  # type: ignore[attr-defined]
        # A checkpoint a reader blocked leaves older page images in the file: say so, rather
        # than report what the file still holds as left behind by the removal.
        assert self.services.db.checkpoint(), "a reader blocked the WAL checkpoint"


@pytest.fixture
def world(make_services: ServicesFactory, tmp_path: Path) -> World:
    root = tmp_path / "vault"
    return World(make_services("sqlite", data_dir=root), root)


def _assert_present_then_gone(world: World, needles: list[bytes], remove: object) -> None:
    world.flush()
    assert _found(world.root, needles), "positive control: the needles are on disk before"
    remove()  # type: ignore[operator]
    world.flush()
    assert _found(world.root, needles) == []


def _keeper_intact(world: World) -> None:
    view = world.services.vault.scoped(Scope("t1", KEEPER, "a1"))
    assert len(view.list_notes(limit=100)[0]) == len(TOPICS) * 2 + 1
    assert view.search("lighthouse trip lantern", mode="dense")


def test_erasing_a_user_leaves_no_id_vector_or_user_id_in_any_file(world: World) -> None:
    ids, vectors = world.needles(VICTIM, ("a1", "a2", "shared"))
    jobs = install(world.services).erasures
    world.flush()
    assert _found(world.root, vectors), "the stored vectors are on disk before the erase"
    assert _found(world.root, ids), "the note ids are on disk before the erase"
    job = jobs.start("t1", VICTIM, None, "k-admin")
    receipt = jobs.run("t1", job)
    world.flush()
    assert receipt["receipt"]["verified"] is True
    assert _found(world.root, ids + vectors + [VICTIM.encode()]) == []
    _keeper_intact(world)


def test_erasing_an_agent_leaves_none_of_its_notes_or_vectors(world: World) -> None:
    ids, vectors = world.needles(VICTIM, ("a1",))
    jobs = install(world.services).erasures

    def erase() -> None:
        receipt = jobs.run("t1", jobs.start("t1", VICTIM, "a1", "k-admin"))
        assert receipt["receipt"]["verified"] is True

    _assert_present_then_gone(world, ids + vectors, erase)
    other = world.services.vault.scoped(Scope("t1", VICTIM, "a2"))
    assert len(other.list_notes(limit=100)[0]) == len(TOPICS) * 2 + 1
    _keeper_intact(world)


def test_deleting_the_tenant_leaves_no_note_user_or_vector(world: World) -> None:
    ids, vectors = world.needles(VICTIM, ("a1", "a2", "shared"))
    keeper_ids, keeper_vectors = world.needles(KEEPER, ("a1", "a2", "shared"))
    deletions = install(world.services).tenant_deletions

    def delete() -> None:
        assert deletions.delete("t1")["receipt"]["verified"] is True

    needles = ids + vectors + keeper_ids + keeper_vectors
    _assert_present_then_gone(world, needles, delete)
    assert _found(world.root, [VICTIM.encode(), KEEPER.encode()]) == []


def test_a_purged_note_leaves_nothing_after_compaction(world: World) -> None:
    ids, vectors = world.needles(VICTIM, ("a1",))
    target_ids, target_vectors = ids[:2], [vectors[0], vectors[len(vectors) // 2]]
    view = world.services.vault.scoped(Scope("t1", VICTIM, "a1"))

    def purge() -> None:
        view.delete(world.ids[(VICTIM, "a1")][0], purge=True)
        world.services.index.compact("t1")

    _assert_present_then_gone(world, target_ids + target_vectors, purge)
    assert len(view.list_notes(limit=100)[0]) == len(TOPICS) * 2  # the rest stay
    assert _found(world.root, _id_needles(world.ids[(VICTIM, "a1")][1:2]))


def test_an_expired_note_leaves_nothing_after_the_retention_sweep(world: World) -> None:
    from memvault.compliance.retention import retention_sweeper

    scope = Scope("t1", VICTIM, "a1")
    view = world.services.vault.scoped(scope)
    text = f"{VICTIM} will forget the borrowed umbrella story"
    note = view.add(text, ttl_days=1)
    needles = _id_needles([note.id]) + _vector_needles(world.services, scope, [text])
    parts = world.services.vault.parts
    real_clock = parts.clock

    def sweep_after_expiry() -> None:
        parts.clock = lambda: real_clock() + 2 * 86_400
        try:
            assert retention_sweeper(world.services)() == 1
        finally:
            parts.clock = real_clock

    _assert_present_then_gone(world, needles, sweep_after_expiry)
    assert len(view.list_notes(limit=100)[0]) == len(TOPICS) * 2 + 1


def test_an_erase_over_the_api_leaves_no_id_in_any_file_audit_log_included(
    make_services: ServicesFactory, tmp_path: Path
) -> None:
    from tests.apiclient import Api

    root = tmp_path / "served"
    api = Api(make_services("sqlite", data_dir=root))
    admin = api.tenant("t1")
    key = api.agent_key("t1", VICTIM, "a1")
    notes = [api.add(key, text) for text in _texts(VICTIM, "a1")[:4]]
    link = api.call(
        "POST", f"/v1/memories/{notes[0]['id']}/links", key, json={"target_id": notes[1]["id"]}
    )
    assert link.status_code == 204, link.text
    api.search(key, "lighthouse trip")
    keeper = api.agent_key("t1", KEEPER, "a1")
    api.add(keeper, "the keeper notes the orchard gate")
    needles = [*_id_needles(n["id"] for n in notes), VICTIM.encode()]
    api.services.db.checkpoint()
    assert _found(root, needles), "positive control: ids are on disk (rows, index) before"
    r = api.call("POST", "/v1/admin/erase", admin, json={"user_id": VICTIM})
    assert r.status_code == 200 and r.json()["receipt"]["verified"] is True, r.text
    export = api.call("GET", "/v1/admin/audit/export", admin)
    assert export.status_code == 200 and "note.added" in export.text
    api.services.close()
    assert _found(root, needles) == []

"""A dedicated (Mode B) agent reads its own notes only, in its own partition; the Mode A agents
of the same user never read its notes (issue 32, deliverable 3). Over HTTP, both backends, both
index adapters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memvault.index import EdgeIndex
from memvault.index._edge_layout import partition_folder_name, shard_folder_name
from memvault.vault.drafts import dedicated_tag, namespace_for, user_tag
from tests.test_dedicated.conftest import TENANT, USER, World, partition_count

MODES: tuple[dict[str, Any], ...] = (
    {"mode": "dense"},
    {"mode": "sparse"},
    {"mode": "hybrid"},
    {"mode": "hybrid", "fusion": "rrf"},
    {"mode": "full"},
)
QUERIES = ("lighthouse", "lighthouse alarm code", "lighthouse closes at nine")


def _found(world: World, key: str, **body: Any) -> set[str]:
    found: set[str] = set()
    for query in QUERIES:
        found |= {r["id"] for r in world.api.search(key, query, limit=20, **body)}
    return found


def test_writes_land_in_a_partition_of_their_own(world: World) -> None:
    api = world.api
    assert partition_count(api, USER, "sandbox") == 2  # its two notes, and nothing else
    assert partition_count(api, USER) == 4  # main's three, helper's one
    index = api.services.index
    if isinstance(index, EdgeIndex):  # on disk: a shard folder of its own
        tag = api.services.keyring.index_key(TENANT).tag
        ns = Path(index.root) / shard_folder_name(namespace_for(TENANT))
        own = ns / partition_folder_name(dedicated_tag(tag, USER, "sandbox"))
        users = ns / partition_folder_name(user_tag(tag, USER))
        assert own.is_dir() and users.is_dir() and own != users
    rows = api.services.db
    with rows.session(TENANT) as sess:
        from sqlalchemy import text

        stored = dict(sess.execute(text("SELECT id, visibility FROM notes")).all())
    assert {stored[world.ids[f"sandbox_{i}"]] for i in range(2)} == {"dedicated"}
    assert stored[world.ids["main_private"]] == "private"
    # under its own data key: every agent has its own (tenant, user, agent) data keys, and a
    # dedicated agent never writes under the shared scope's
    keyring = api.services.keyring
    assert keyring.count_keys(TENANT, USER, "sandbox") == 1
    assert keyring.count_keys(TENANT, USER, "main") == 1


def test_other_agents_writes_move_no_dedicated_score(world: World) -> None:
    """Its BM25 statistics are over its own partition: the Mode A agents' notes, private or
    shared, full of the query's words, move none of its results or scores."""
    api = world.api
    modes = ({"mode": "dense"}, {"mode": "sparse"}, {"mode": "hybrid"})

    def answers() -> list[list[tuple[str, float]]]:
        return [
            [(r["id"], r["score"]) for r in api.search(world.sandbox, q, limit=10, **body)]
            for q in QUERIES
            for body in modes
        ]

    before = answers()
    for i in range(12):
        api.add(world.main, f"lighthouse lamp bulb winter note {i}: lighthouse lighthouse")
        api.add(world.helper, f"shared lighthouse maintenance {i}", visibility="shared")
    assert answers() == before


@pytest.mark.parametrize("body", MODES, ids=lambda b: "-".join(b.values()))
def test_search_in_every_mode_sees_own_partition_only(world: World, body: dict[str, Any]) -> None:
    own = {world.ids["sandbox_0"], world.ids["sandbox_1"]}
    assert _found(world, world.sandbox, **body) == own  # no shared note, no readers note
    for key in (world.main, world.helper):
        seen = _found(world, key, **body)
        assert seen and not seen & own, "a Mode A agent found a dedicated agent's note"
    # positive control: Mode A still sees the shared note and what names it in readers
    assert world.ids["main_shared"] in _found(world, world.helper, **body)


def test_list_get_links_see_own_notes_only(world: World) -> None:
    api = world.api
    listed = api.call("GET", "/v1/memories?limit=100", world.sandbox).json()
    assert {n["id"] for n in listed["items"]} == {world.ids["sandbox_0"], world.ids["sandbox_1"]}
    assert listed["total"] == 2
    for name in ("main_private", "main_shared", "main_to_sandbox", "helper_private"):
        note_id = world.ids[name]
        assert api.call("GET", f"/v1/memories/{note_id}", world.sandbox).status_code == 404
        assert api.call("GET", f"/v1/memories/{note_id}/links", world.sandbox).status_code == 404
    for key in (world.main, world.helper):
        for i in range(2):
            note_id = world.ids[f"sandbox_{i}"]
            assert api.call("GET", f"/v1/memories/{note_id}", key).status_code == 404
        listed = api.call("GET", "/v1/memories?limit=100", key).json()
        assert not {n["id"] for n in listed["items"]} & {world.ids["sandbox_0"]}
    # positive control: the readers note is readable by sandbox's name in Mode A only
    assert (
        api.call("GET", f"/v1/memories/{world.ids['main_to_sandbox']}", world.main).status_code
        == 200
    )
    got = api.call("GET", f"/v1/memories/{world.ids['sandbox_0']}", world.sandbox)
    assert got.status_code == 200 and got.json()["visibility"] == "private"
    # its own links work, and link only its own notes
    r = api.call(
        "POST",
        f"/v1/memories/{world.ids['sandbox_0']}/links",
        world.sandbox,
        json={"target_id": world.ids["sandbox_1"]},
    )
    assert r.status_code == 204, r.text
    r = api.call(
        "POST",
        f"/v1/memories/{world.ids['sandbox_0']}/links",
        world.sandbox,
        json={"target_id": world.ids["main_shared"]},
    )
    assert r.status_code == 404, r.text
    links = api.call("GET", f"/v1/memories/{world.ids['sandbox_0']}/links", world.sandbox)
    assert {x["id"] for x in links.json()["links"]} == {world.ids["sandbox_1"]}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"visibility": "shared"}, "visibility"),
        ({"readers": ["sandbox", "main"]}, "readers"),
        ({"readers": ["main"]}, "readers"),
    ],
)
def test_sharing_is_refused_naming_the_field(
    world: World, body: dict[str, Any], field: str
) -> None:
    api = world.api
    before = partition_count(api, USER, "sandbox"), partition_count(api, USER)
    r = api.call("POST", "/v1/memories", world.sandbox, json={"text": "a lighthouse", **body})
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["code"] == "isolation_refused" and error["message"].startswith(field)
    assert (partition_count(api, USER, "sandbox"), partition_count(api, USER)) == before
    note = world.ids["sandbox_0"]
    r = api.call("PATCH", f"/v1/memories/{note}", world.sandbox, json={"readers": ["main"]})
    assert r.status_code == 422 and r.json()["error"]["code"] == "isolation_refused", r.text
    r = api.call(
        "POST", "/v1/memories/batch", world.sandbox, json={"items": [{"text": "x y z", **body}]}
    )
    assert r.status_code == 200, r.text
    item = r.json()["results"][0]
    assert item["error"]["code"] == "isolation_refused", item

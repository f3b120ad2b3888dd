"""Erasing a dedicated agent drops its partition whole and verifies zero in every store; a
user's erase drops its dedicated agents' partitions too. HTTP, both backends, both adapters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memvault.index import EdgeIndex
from memvault.index._edge_layout import partition_folder_name, shard_folder_name
from memvault.vault.drafts import dedicated_tag, namespace_for
from tests.test_dedicated.conftest import (
    TENANT,
    USER,
    World,
    dedicated_key,
    issue,
    partition_count,
)


def _erase(world: World, **subject: Any) -> dict[str, Any]:
    api = world.api
    r = api.call("POST", "/v1/admin/erase", api.tenant(TENANT), json={"user_id": USER, **subject})
    assert r.status_code == 200, r.text
    receipt = r.json()["receipt"]
    assert receipt["verified"] is True, receipt
    stores = {s["store"]: s for s in receipt["stores"]}
    assert all(s["remaining"] == 0 for s in stores.values()), stores
    return stores


def _own_folder(world: World, agent: str) -> Path | None:
    index = world.api.services.index
    if not isinstance(index, EdgeIndex):
        return None
    tag = world.api.services.keyring.index_key(TENANT).tag
    ns = Path(index.root) / shard_folder_name(namespace_for(TENANT))
    return ns / partition_folder_name(dedicated_tag(tag, USER, agent))


def _inventory(world: World, **subject: str) -> dict[str, int]:
    api = world.api
    query = "&".join(f"{k}={v}" for k, v in {"user_id": USER, **subject}.items())
    r = api.call("GET", f"/v1/admin/inventory?{query}", api.tenant(TENANT))
    assert r.status_code == 200, r.text
    return {s["store"]: s["count"] for s in r.json()["stores"] if s["count"] is not None}


def test_erasing_a_dedicated_agent_drops_its_partition(world: World) -> None:
    folder = _own_folder(world, "sandbox")
    assert folder is None or folder.is_dir()
    before = _inventory(world, agent_id="sandbox")
    assert before["vectors"] == 2 and before["agent_isolation"] == 1  # positive control
    stores = _erase(world, agent_id="sandbox")
    assert stores["vectors"]["deleted"] == 2
    assert stores["agent_isolation"] == {"store": "agent_isolation", "deleted": 1, "remaining": 0}
    assert partition_count(world.api, USER, "sandbox") == 0
    assert folder is None or not folder.exists(), "the partition was not dropped whole"
    assert partition_count(world.api, USER) == 4  # Mode A agents untouched
    hits = world.api.search(world.main, "lighthouse", limit=10)
    assert world.ids["main_private"] in {h["id"] for h in hits}
    assert world.api.call("GET", "/v1/memories", world.sandbox).status_code == 401
    # the agent is gone: a new one of the same id may choose again
    assert issue(world.api, "sandbox").json()["isolation"] == "shared"


def test_erasing_the_user_drops_its_dedicated_partitions(world: World) -> None:
    second = dedicated_key(world.api, "lab")
    world.api.add(second, "The lab keeps a lighthouse model on the shelf")
    assert partition_count(world.api, USER, "lab") == 1
    assert _inventory(world)["vectors"] == 7  # 4 shared-partition + 2 sandbox + 1 lab
    stores = _erase(world)
    assert stores["vectors"]["deleted"] == 7
    assert stores["agent_isolation"]["deleted"] == 4  # main, helper, sandbox, lab
    for agent in ("sandbox", "lab"):
        assert partition_count(world.api, USER, agent) == 0
        folder = _own_folder(world, agent)
        assert folder is None or not folder.exists()
    assert partition_count(world.api, USER) == 0

"""A data dir indexed before blind payload tags is re-indexed once at startup."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from memvault.compliance.index_upgrade import needs_upgrade, upgrade_index_payloads
from memvault.scope import Scope
from memvault.store.scoping import OwnedBy, scoped_select
from tests.conftest import ServicesFactory

USER = "usrqzlegacy"


def test_points_with_clear_ids_are_rebuilt_with_tags(
    make_services: ServicesFactory, tmp_path: Path
) -> None:
    root = tmp_path / "vault"
    services = make_services("sqlite", data_dir=root)
    services.tenants.create("t1")
    view = services.vault.scoped(Scope("t1", USER, "a1"))
    view.add("the legacy note about the walnut cabinet")
    assert not needs_upgrade(services, "t1")  # written today: tagged

    # Rewrite the point as an older version did: clear user, agent and reader ids.
    with services.db.session("t1") as sess:
        rows = list(sess.execute(scoped_select(OwnedBy("t1"))).scalars())
    items = [(r, services.vault.decrypt_row(r).text, ()) for r in rows]
    services.index.drop_namespace("t1")
    legacy = [
        dataclasses.replace(
            p, payload={**p.payload, "user_id": USER, "agent_id": "a1", "readers": ["a1"]}
        )
        for p in services.vault.index_points(items, 10.0)
    ]
    services.index.upsert("t1", legacy)
    assert view.search("walnut cabinet", mode="dense") == []  # invisible to tag filters
    assert needs_upgrade(services, "t1")

    assert upgrade_index_payloads(services) == 1
    assert not needs_upgrade(services, "t1")
    assert [h.note.text for h in view.search("walnut cabinet", mode="dense")] == [
        "the legacy note about the walnut cabinet"
    ]
    assert upgrade_index_payloads(services) == 0
    services.close()
    index_files = [p for p in (root / "index").rglob("*") if p.is_file()]
    assert index_files and not any(USER.encode() in p.read_bytes() for p in index_files)

"""A tenant deleted through one worker and created again: another worker that held the tenant's
unwrapped keys must not seal the new tenant's notes under them.

Before, worker B kept the deleted tenant's keys cached (its guard compared only the user's
newest erase job), sealed the re-created tenant's notes under shredded keys, and worker A
answered `decryption_failed` for them."""

from __future__ import annotations

from memvault.compliance.wiring import install
from memvault.runtime.factory import Services
from memvault.scope import Scope

USER = "usrqzreborn"


def test_a_worker_drops_the_keys_of_a_tenant_deleted_by_another(
    two_workers: tuple[Services, Services],
) -> None:
    a, b = two_workers
    scope = Scope("t1", USER, "a1")
    a.tenants.create("t1")
    b.vault.scoped(scope).add("Reborn hive one sits by the gate")  # B caches the keys
    receipt = install(a).tenant_deletions.delete("t1")
    assert receipt["receipt"]["verified"] is True
    a.tenants.create("t1")
    ids = [b.vault.scoped(scope).add(f"Reborn hive {n} sits by the gate").id for n in range(3)]
    for note_id in ids:
        assert a.vault.scoped(scope).get(note_id) is not None  # sealed under the new keys

"""An erase of one user does not block another user's reads or writes (issue 35).

The mechanism, not timing: the erase is held between two of its row-deleting transactions and
at the step boundaries; meanwhile another user of the same tenant searches and adds from
another thread, and must finish while the erase is still held. The erase never takes the
index's namespace lock exclusively (other users' partitions live under it). Then the erase
completes with a verified receipt. SQLite and PostgreSQL.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from memvault.compliance.wiring import install
from memvault.index._edge_shards import SharedLock
from memvault.runtime.factory import Services
from memvault.scope import Scope
from memvault.vault.drafts import NoteDraft
from tests.conftest import ServicesFactory

TENANT = "t1"


def _other_user_works(services: Services, n: int) -> dict[str, Any]:
    """Another user searches and adds (note `n`) from another thread; what it got."""
    view = services.vault.scoped(Scope(TENANT, "usrqzother", "a1"))
    out: dict[str, Any] = {}

    def work() -> None:
        out["hits"] = len(view.search("violin lesson", limit=5, mode="full"))
        view.add_many([NoteDraft(f"violin case number {n} is in the hall cupboard")])
        out["added"] = True

    worker = threading.Thread(target=work)
    worker.start()
    worker.join(30)
    out["finished"] = not worker.is_alive()
    return out


@contextmanager
def _exclusive_locks_recorded() -> Iterator[list[str]]:
    """Record every exclusive hold of any namespace lock while the block runs."""
    taken: list[str] = []
    original: Callable[..., Any] = SharedLock.exclusive

    def exclusive(self: SharedLock) -> Any:
        taken.append("exclusive")
        return original(self)

    SharedLock.exclusive = exclusive  # type: ignore[method-assign]
    try:
        yield taken
    finally:
        SharedLock.exclusive = original  # type: ignore[method-assign]


def test_another_user_reads_and_writes_while_an_erase_is_midway(
    make_services: ServicesFactory, backend: str
) -> None:
    services = make_services(backend)
    services.tenants.create(TENANT)
    erased = services.vault.scoped(Scope(TENANT, "usrqzerased", "a1"))
    erased.add_many(
        [NoteDraft(f"the erased user's note number {i} about rowing") for i in range(9)]
    )
    other = services.vault.scoped(Scope(TENANT, "usrqzother", "a1"))
    other.add_many([NoteDraft("the violin lesson moved to Thursday")])
    jobs = install(services).erasures
    services.eraser.chunk_rows = 2  # 9 notes: five transactions, a pause after each
    seen: list[dict[str, Any]] = []
    services.eraser.between_chunks = lambda: seen.append(_other_user_works(services, len(seen)))
    jobs.fault = lambda at: (
        seen.append(_other_user_works(services, len(seen)))
        if at
        in {
            "after:vectors",
            "before:scrub",
        }
        else None
    )
    try:
        with _exclusive_locks_recorded() as exclusive:
            job = jobs.start(TENANT, "usrqzerased", None, "test")
            receipt = jobs.run(TENANT, job)
    finally:
        jobs.fault = None
    assert len(seen) == 5 + 2, "the erase did not pause between its row transactions"
    for result in seen:
        assert result["finished"], "another user's search or add waited for the erase"
        assert result["hits"] >= 1 and result["added"]
    assert exclusive == [], "a user's erase took a namespace lock exclusively"
    assert receipt["receipt"]["verified"]
    assert all(n == 0 for n in services.eraser.remaining(TENANT, "usrqzerased").values())
    assert len(other.search("violin", limit=20, mode="full")) >= 1 + len(seen)

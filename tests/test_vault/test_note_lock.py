"""`Vault.note_lock` over several notes: each stripe once, in stripe order.

Absorbing a note holds its lock and its survivor's, and a key rotation holds a batch's; two
callers whose sets overlap in opposite orders must neither deadlock nor run together, and two
ids on one stripe must not take that (non-reentrant) lock twice.
"""

from __future__ import annotations

import threading

from memvault.runtime.factory import Services
from memvault.vault.service import NOTE_LOCK_STRIPES
from tests.conftest import ServicesFactory

ROUNDS = 300


def _same_stripe(note_id: str) -> str:
    """Another id on `note_id`'s stripe."""
    stripe = hash(note_id) % NOTE_LOCK_STRIPES
    return next(
        other
        for other in (f"note-{i}" for i in range(10_000))
        if other != note_id and hash(other) % NOTE_LOCK_STRIPES == stripe
    )


def test_ids_on_one_stripe_take_its_lock_once(make_services: ServicesFactory) -> None:
    vault = make_services().vault
    done = threading.Event()

    def hold() -> None:
        with vault.note_lock("alpha", _same_stripe("alpha"), "alpha"):
            done.set()

    worker = threading.Thread(target=hold, daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert done.is_set(), "a stripe's lock was taken twice by one caller"


def test_overlapping_sets_in_opposite_orders_exclude_each_other_without_deadlock(
    make_services: ServicesFactory,
) -> None:
    services: Services = make_services()
    vault = services.vault
    inside: list[str] = []
    overlaps: list[int] = []
    finished = threading.Barrier(3)

    def run(name: str, ids: tuple[str, ...]) -> None:
        for _ in range(ROUNDS):
            with vault.note_lock(*ids):
                inside.append(name)
                if len(inside) > 1:
                    overlaps.append(1)
                inside.remove(name)
        finished.wait(timeout=30)

    threads = [
        threading.Thread(target=run, args=("a", ("n1", "n2", "n3")), daemon=True),
        threading.Thread(target=run, args=("b", ("n3", "n2")), daemon=True),
    ]
    for thread in threads:
        thread.start()
    finished.wait(timeout=30)  # a deadlock breaks the barrier: BrokenBarrierError
    assert overlaps == []

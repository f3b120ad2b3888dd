"""Group commit: concurrent adds coalesce into micro-batches, led by one of their writers.

The leader/follower mechanism is `memvault.batcher.Batcher`. A writer counts itself in
(`GroupCommitter.arriving`) when it enters the add path, and `submit`s its prepared work once
screened and sealed. A leader waits at most the window (about a millisecond) and only while
other writers are still preparing, so a lone writer never waits. A follower returns only once
its batch is durable.

`store_batch` keeps the add's crash-safety protocol (docs/architecture.md, "Write protocol"):
one embedding model call for every text of the batch, one upsert per namespace, then one
transaction per tenant. If the combined batch fails before a job's transaction commits, each
such job is run again alone, so a bad job fails only its own caller.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session

from memvault.batcher import Batcher, Runner
from memvault.observability import count_group_commit
from memvault.store.driver_sql import DriverConnection
from memvault.store.models import NoteRow
from memvault.vault.drafts import INSERT_NOTE, row_params
from memvault.vault.points import build_points, embed_items
from memvault.vault.sessions import IndexContext

if TYPE_CHECKING:
    from memvault.vault.parts import VaultCore

__all__ = ["GroupCommitter", "Prepared", "StoreJob", "store_batch"]

DEFAULT_WINDOW_MS = 1.0
DEFAULT_MAX_BATCH = 64


@dataclass(frozen=True, slots=True)
class Prepared:
    """A validated, screened and sealed draft: its row (not stored yet) and plaintext to index."""

    row: NoteRow
    text: str
    topics: tuple[str, ...]
    tokens: tuple[str, ...] = ()
    attrs: Mapping[str, Any] = field(default_factory=dict)
    """The attributes sealed in the row (the stored note is built from them, not decrypted)."""

    @property
    def extra(self) -> dict[str, Any]:
        """A-MEM's keywords and context: indexed with the note, never part of its content."""
        return {k: self.attrs[k] for k in ("keywords", "context") if k in self.attrs}


@dataclass(frozen=True, slots=True)
class StoreJob:
    """One add's share of a batch: its prepared rows (one tenant) with their index contexts."""

    tenant: str
    namespace: str
    items: Sequence[Prepared]
    contexts: Sequence[IndexContext]


class GroupCommitter(Batcher):
    """The batcher of one vault's adds (`Batcher`): a leader waits up to `window_ms` for
    writers still preparing; every batch is counted in the group-commit metrics."""

    def __init__(
        self,
        run: Runner,
        *,
        enabled: bool = True,
        window_ms: float = DEFAULT_WINDOW_MS,
        max_batch: int = DEFAULT_MAX_BATCH,
    ) -> None:
        super().__init__(
            run,
            enabled=enabled,
            window_ms=window_ms,
            max_batch=max_batch,
            observe=count_group_commit,
        )


class _Failed:
    """A job whose transaction did not commit: it is run again alone."""

    __slots__ = ("error",)

    def __init__(self, error: Exception) -> None:
        self.error = error


def store_batch(vault: VaultCore, jobs: Sequence[StoreJob]) -> list[set[int] | BaseException]:
    """Index and commit jobs together; per job, the positions a live twin refused, or an error.

    A job whose share failed before its commit runs again alone; only a job that fails alone
    (or a batch of one) gets the error. A job whose transaction committed is never rerun.
    """
    try:
        outcomes: list[Any] = _together(vault, jobs)
    except Exception as exc:  # nothing of this batch committed
        outcomes = [_Failed(exc)] * len(jobs)
    if len(jobs) == 1:
        return [o.error if isinstance(o, _Failed) else o for o in outcomes]
    results: list[set[int] | BaseException] = []
    for job, outcome in zip(jobs, outcomes, strict=True):
        if isinstance(outcome, _Failed):
            results.extend(store_batch(vault, [job]))
        else:
            results.append(outcome)
    return results


def _together(vault: VaultCore, jobs: Sequence[StoreJob]) -> list[Any]:
    """Embed once, upsert once per namespace, then one transaction per tenant (see module)."""
    parts = vault.parts
    flat = [
        (job, item, ctx) for job in jobs for item, ctx in zip(job.items, job.contexts, strict=True)
    ]
    entries = [(item.row, item.text, item.topics) for _, item, _ in flat]
    vectors = embed_items(parts, entries, [ctx for _, _, ctx in flat])
    groups: dict[tuple[str, str], list[int]] = {}
    for k, job in enumerate(jobs):
        groups.setdefault((job.tenant, job.namespace), []).append(k)
    for (tenant, _), members in groups.items():  # durable before any vector is written
        parts.marks.touch(tenant, (item.row.user_id for k in members for item in jobs[k].items))
    start = 0
    offsets = []
    for job in jobs:
        offsets.append(start)
        start += len(job.items)
    for (tenant, namespace), members in groups.items():
        rows = [item.row for k in members for item in jobs[k].items]
        avgdl = parts.corpus.avgdl_with(
            tenant, namespace, len(rows), sum(r.token_count for r in rows)
        )
        picked = [i for k in members for i in range(offsets[k], offsets[k] + len(jobs[k].items))]
        points = build_points(
            parts,
            [entries[i] for i in picked],
            avgdl,
            tokens=[flat[i][1].tokens for i in picked],
            contexts=[flat[i][2] for i in picked],
            vectors=[vectors[i] for i in picked],
        )
        parts.index.upsert(namespace, points)
    vault.fault("after_upsert")
    now = parts.clock()
    outcomes: list[Any] = [None] * len(jobs)
    for (tenant, namespace), members in groups.items():
        shares: list[Any]
        try:
            shares = _commit(vault, tenant, namespace, [jobs[k] for k in members], now)
        except Exception as exc:
            shares = [_Failed(exc)] * len(members)
        for k, outcome in zip(members, shares, strict=True):
            outcomes[k] = outcome
    if any(not isinstance(o, _Failed) for o in outcomes):
        try:
            vault.fault("after_commit")
        except Exception as exc:  # committed: reported, never rerun
            outcomes = [o if isinstance(o, _Failed) else exc for o in outcomes]
    return outcomes


def _commit(
    vault: VaultCore, tenant: str, namespace: str, jobs: Sequence[StoreJob], now: float
) -> list[set[int]]:
    """ONE transaction for a tenant's jobs: insert unless a live twin exists, count, link.

    Without session links to write, the transaction runs on the driver's connection
    (`Database.driver_transaction`): the add's hot path skips the ORM session.
    """
    from memvault.vault.session_index import SessionIndexer

    parts = vault.parts
    refused: list[set[int]] = [set() for _ in jobs]
    linking = any(ctx.prev_id is not None for job in jobs for ctx in job.contexts)
    transaction: AbstractContextManager[Session | DriverConnection] = (
        parts.db.session(tenant) if linking else parts.db.driver_transaction(tenant)
    )
    with transaction as sess:
        stored = []
        prev_of: dict[str, str | None] = {}
        for k, job in enumerate(jobs):
            for pos, (item, ctx) in enumerate(zip(job.items, job.contexts, strict=True)):
                if not INSERT_NOTE.rows(sess, row_params(item.row, now)):
                    refused[k].add(pos)
                else:
                    stored.append(item.row)
                    if ctx.prev_id is not None:
                        prev_of[item.row.id] = ctx.prev_id
        parts.corpus.add_returning(
            sess, tenant, namespace, len(stored), sum(r.token_count for r in stored)
        )
        if prev_of:
            assert isinstance(sess, Session)  # `linking`
            SessionIndexer(vault).link_new(sess, stored, prev_of)
    return refused

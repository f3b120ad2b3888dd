"""Per-namespace BM25 statistics (document count, token total) kept in SQL beside the notes.

The average document length (avgdl) normalizes BM25 term weights. Each note's weights are
computed with the avgdl at its write; as a namespace grows the figure settles. Early notes keep
weights from a smaller corpus (a re-index would recompute them; not built yet).

An add weighs its sparse vector BEFORE its transaction (its vector is upserted first, see
`writes.py`), so this process keeps the counts it last saw committed for each namespace: read
once, then refreshed by every add's `UPDATE ... RETURNING`. Another process's writes (PostgreSQL
with several servers) reach this view at this process's next add; the figure is an average, so
being one add behind only nudges the weights, as the note above already allows.
"""

from __future__ import annotations

import threading

from sqlalchemy import Connection, Table, bindparam, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from memvault.store.database import Database
from memvault.store.driver_sql import DriverConnection, DriverStatement
from memvault.store.models import CorpusStatsRow

DEFAULT_AVGDL = 12.0
"""Used until a namespace holds a document: a typical length of a short memory in tokens."""


class CorpusStats:
    """Reads and adjusts the statistics of one namespace inside the caller's transaction."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._known: set[tuple[str, str]] = set()
        self._counts: dict[tuple[str, str], tuple[int, int]] = {}
        self._lock = threading.Lock()

    def ensure(self, tenant: str, namespace: str) -> None:
        """Create the namespace's row if missing (its own transaction, race-safe)."""
        if (tenant, namespace) in self._known:
            return
        self._ensure(tenant, namespace)
        self._known.add((tenant, namespace))

    def forget_tenant(self, tenant: str) -> None:
        """The tenant's rows were deleted: the next write recreates them."""
        with self._lock:
            self._known = {k for k in self._known if k[0] != tenant}
            self._counts = {k: v for k, v in self._counts.items() if k[0] != tenant}

    def _ensure(self, tenant: str, namespace: str) -> None:
        with self._db.session(tenant) as sess:
            row = sess.get(CorpusStatsRow, (tenant, namespace))
            if row is not None:
                self._counts[(tenant, namespace)] = (int(row.doc_count), int(row.token_total))
                return
        try:
            with self._db.session(tenant) as sess:
                sess.add(
                    CorpusStatsRow(
                        tenant_id=tenant, namespace=namespace, doc_count=0, token_total=0
                    )
                )
        except IntegrityError:
            pass  # another writer created it first
        self._counts.setdefault((tenant, namespace), (0, 0))

    def avgdl_with(self, tenant: str, namespace: str, docs: int, tokens: int) -> float:
        """The avgdl once `docs` documents of `tokens` tokens join the counts last committed.

        No SQL: `ensure` read the counts, and every `add_returning` refreshes them.
        """
        if (tenant, namespace) not in self._counts:
            self._known.discard((tenant, namespace))
            self.ensure(tenant, namespace)
        doc_count, token_total = self._counts.get((tenant, namespace), (0, 0))
        return _avgdl(doc_count + docs, token_total + tokens)

    def add_returning(
        self,
        conn: Session | Connection | DriverConnection,
        tenant: str,
        namespace: str,
        docs: int,
        tokens: int,
    ) -> None:
        """`adjust` in one statement that also returns the new counts (kept for `avgdl_with`).

        Call it inside the add's transaction; the kept counts are only a weighting hint, so a
        rollback after it leaves at most one add's worth of drift until the next add.
        """
        found = _ADD_RETURNING_DRIVER.rows(
            conn, {"t": tenant, "n": namespace, "d": docs, "k": tokens}
        )
        if found:
            self._counts[(tenant, namespace)] = (int(found[0][0]), int(found[0][1]))

    @staticmethod
    def avgdl(sess: Session, tenant: str, namespace: str) -> float:
        row = sess.execute(
            select(CorpusStatsRow.doc_count, CorpusStatsRow.token_total).where(
                CorpusStatsRow.tenant_id == tenant, CorpusStatsRow.namespace == namespace
            )
        ).first()
        return DEFAULT_AVGDL if row is None else _avgdl(row[0], row[1])

    @staticmethod
    def adjust(sess: Session, tenant: str, namespace: str, docs: int, tokens: int) -> None:
        """Add (or, negative, remove) documents and tokens."""
        sess.execute(
            update(CorpusStatsRow)
            .where(CorpusStatsRow.tenant_id == tenant, CorpusStatsRow.namespace == namespace)
            .values(
                doc_count=CorpusStatsRow.doc_count + docs,
                token_total=CorpusStatsRow.token_total + tokens,
            )
        )


def _avgdl(doc_count: int, token_total: int) -> float:
    return DEFAULT_AVGDL if doc_count <= 0 else max(1.0, token_total / doc_count)


_STATS: Table = CorpusStatsRow.__table__  # type: ignore[assignment]
_ADD_RETURNING = (
    update(_STATS)
    .where(_STATS.c.tenant_id == bindparam("t"), _STATS.c.namespace == bindparam("n"))
    .values(
        doc_count=_STATS.c.doc_count + bindparam("d"),
        token_total=_STATS.c.token_total + bindparam("k"),
    )
    .returning(_STATS.c.doc_count, _STATS.c.token_total)
)
_ADD_RETURNING_DRIVER = DriverStatement(_ADD_RETURNING, "update")
"""Built once, compiled once per dialect, run on the driver's cursor (`store.driver_sql`)."""

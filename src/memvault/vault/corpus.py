"""Per-namespace BM25 statistics (document count, token total) kept in SQL beside the notes.

The average document length (avgdl) normalizes BM25 term weights. Each note's weights are
computed with the avgdl at its write; as a namespace grows the figure settles. Early notes keep
weights from a smaller corpus (a re-index would recompute them; not built yet).
"""

from __future__ import annotations

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from memvault.vault.store.database import Database
from memvault.vault.store.models import CorpusStatsRow

DEFAULT_AVGDL = 12.0
"""Used until a namespace holds a document: a typical length of a short memory in tokens."""


class CorpusStats:
    """Reads and adjusts the statistics of one namespace inside the caller's transaction."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._known: set[tuple[str, str]] = set()

    def ensure(self, tenant: str, namespace: str) -> None:
        """Create the namespace's row if missing (its own transaction, race-safe)."""
        if (tenant, namespace) in self._known:
            return
        self._ensure(tenant, namespace)
        self._known.add((tenant, namespace))

    def forget_tenant(self, tenant: str) -> None:
        """The tenant's rows were deleted: the next write recreates them."""
        self._known = {k for k in self._known if k[0] != tenant}

    def _ensure(self, tenant: str, namespace: str) -> None:
        with self._db.session(tenant) as sess:
            if sess.get(CorpusStatsRow, (tenant, namespace)) is not None:
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

    @staticmethod
    def avgdl(sess: Session, tenant: str, namespace: str) -> float:
        row = sess.execute(
            select(CorpusStatsRow.doc_count, CorpusStatsRow.token_total).where(
                CorpusStatsRow.tenant_id == tenant, CorpusStatsRow.namespace == namespace
            )
        ).first()
        if row is None or row[0] <= 0:
            return DEFAULT_AVGDL
        return max(1.0, row[1] / row[0])

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

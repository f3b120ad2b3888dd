"""`DatabaseSessionStore`: console sessions in the `console_sessions` table (migration 0011).

Every worker on one database reads and writes the same rows, so a console session is the same
on each of them. A row holds the SHA-256 of the session token, never the token; the sealed
session opens only with the token (`memvault.console.session`).
"""

from __future__ import annotations

from sqlalchemy import delete

from memvault.store.database import Database
from memvault.store.models import ConsoleSessionRow


class DatabaseSessionStore:
    """A `SessionStore` over the data store (no tenant: an operator's session has none)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def put(self, digest: str, sealed: bytes, expires_at: float, now: float) -> None:
        with self._db.session(None) as sess:
            sess.execute(delete(ConsoleSessionRow).where(ConsoleSessionRow.expires_at <= now))
            sess.add(ConsoleSessionRow(id_digest=digest, sealed=sealed, expires_at=expires_at))

    def get(self, digest: str) -> tuple[bytes, float] | None:
        with self._db.session(None) as sess:
            row = sess.get(ConsoleSessionRow, digest)
            return None if row is None else (bytes(row.sealed), float(row.expires_at))

    def delete(self, digest: str) -> None:
        with self._db.session(None) as sess:
            sess.execute(delete(ConsoleSessionRow).where(ConsoleSessionRow.id_digest == digest))

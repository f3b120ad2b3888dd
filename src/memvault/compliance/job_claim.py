"""One runner per erase job across every worker on a PostgreSQL database.

Erase jobs are rows, so any worker may run or resume one: the job's own thread where it was
submitted, and every worker's sweepers (at start-up `resume` takes every `running` job). Before
this claim, a worker starting while another ran a job ran it too: it waited on the scope's lock,
then ran the remaining steps again and signed a second receipt over the first (or recorded a
`scope_busy` error on a job that was progressing). A run now holds a session advisory lock on
the job's id for its whole length; a worker that cannot take it leaves the job to its holder.
SQLite (one process) needs none.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import text

from memvault.errors import VaultError
from memvault.store.database import Database


class JobRunningElsewhere(VaultError):
    """Another worker is running this erase job now; it finishes it."""

    code = "erasure_running_elsewhere"


def claim_key(job_id: str) -> int:
    """The advisory lock key (signed 64 bits) of an erase job."""
    digest = hashlib.sha256(f"memvault.erase-job\0{job_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


@contextmanager
def claimed(db: Database, job_id: str) -> Iterator[None]:
    """Run the body as the job's only runner, or raise `JobRunningElsewhere` at once."""
    if not db.is_postgres:
        yield
        return
    key = claim_key(job_id)
    # Autocommit: the lock's connection holds no snapshot that would keep VACUUM from the rows
    # the erase deletes.
    with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        if not conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": key}).scalar():
            raise JobRunningElsewhere("another worker is running this erase job")
        try:
            yield
        finally:
            conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": key})

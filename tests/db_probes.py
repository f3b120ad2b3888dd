"""Count what the database itself commits, below SQLAlchemy.

The add's hot path runs its transaction on the driver's connection (`Database.driver_transaction`),
which SQLAlchemy's engine events never see, so tests of "one transaction per add" count at the
database: on SQLite every new pool connection traces its statements; on PostgreSQL a write
transaction takes a transaction id, and an inserted row's `xmin` is the id of the transaction
that inserted it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event, text


@contextmanager
def _traced_sqlite(engine: Any, on_statement: Callable[[int, str], None]) -> Iterator[None]:
    """Every connection opened inside the block reports (its number, each statement it runs)."""
    opened: list[int] = []

    def trace(dbapi_conn: Any, _record: Any) -> None:
        number = len(opened)
        opened.append(number)
        dbapi_conn.set_trace_callback(lambda sql: on_statement(number, sql))

    engine.dispose()  # every connection from here on is new, and traced
    event.listen(engine, "connect", trace)
    try:
        yield
    finally:
        event.remove(engine, "connect", trace)
        engine.dispose()


def _is(sql: str, head: str) -> bool:
    return sql.lstrip().upper().startswith(head)


def write_transactions(services: Any, backend: str, action: Callable[[], object]) -> int:
    """How many write transactions the database commits while `action` runs.

    PostgreSQL: counted by transaction ids, which are cluster-wide: a test using this must run
    alone on the cluster (`@pytest.mark.cluster_exclusive`) under xdist.
    """
    engine = services.db.engine
    if backend == "sqlite":
        commits: list[int] = []
        with _traced_sqlite(
            engine, lambda n, sql: commits.append(n) if _is(sql, "COMMIT") else None
        ):
            action()
        return len(commits)

    def xid() -> int:
        with engine.begin() as conn:
            return int(
                conn.exec_driver_sql("SELECT pg_current_xact_id()::text::bigint").scalar_one()
            )

    before = xid()
    action()
    return xid() - before - 1  # each probe takes an id of its own


def notes_inserted_per_transaction(
    services: Any, backend: str, action: Callable[[], object]
) -> list[int]:
    """For each committed transaction that inserted notes while `action` ran, in commit order,
    how many notes it inserted."""
    engine = services.db.engine
    if backend == "sqlite":
        pending: dict[int, int] = {}
        per_commit: list[int] = []

        def on_statement(conn: int, sql: str) -> None:
            if _is(sql, "INSERT INTO NOTES"):
                pending[conn] = pending.get(conn, 0) + 1
            elif _is(sql, "COMMIT") and pending.get(conn):
                per_commit.append(pending.pop(conn))
            elif _is(sql, "ROLLBACK"):
                pending.pop(conn, None)

        with _traced_sqlite(engine, on_statement):
            action()
        return per_commit

    before = _note_xmins(services)
    action()
    xmins = [x for note, x in _note_xmins(services).items() if note not in before]
    return [xmins.count(x) for x in sorted(set(xmins))]


def _note_xmins(services: Any) -> dict[str, int]:
    """PostgreSQL: every note's inserting transaction id, tenant by tenant (row-level security
    shows a session only its tenant's rows)."""
    found: dict[str, int] = {}
    for tenant in services.db.tenant_ids():
        with services.db.session(tenant) as sess:
            rows = sess.execute(text("SELECT id, xmin::text::bigint FROM notes")).all()
        found.update({str(row[0]): int(row[1]) for row in rows})
    return found

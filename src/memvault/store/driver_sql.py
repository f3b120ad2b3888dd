"""Hot-path statements run straight on the database driver's cursor.

SQLAlchemy caches a statement's compiled form, but each execution still builds an execution
context, runs the bind processors through its generic machinery, fires the cursor events and
wraps the result: about 0.2-0.3 ms per statement here, which is most of an add's SQL time (the
database's own work is a fraction of it). A `DriverStatement` compiles its statement once per
dialect and then runs it on the driver's cursor of the caller's transaction: the same SQL, the
same parameters (with the column types' bind processors applied), the same transaction (on
PostgreSQL, the same `app.tenant_id` and row-level security). Only statements on the add's
path use it; everything else goes through SQLAlchemy as usual.

The statement is timed as `sql`/<verb> like every other (`observability.record`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import Connection
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import Session
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler

from memvault.observability import record

__all__ = ["DriverConnection", "DriverStatement"]


@dataclass(frozen=True, slots=True)
class DriverConnection:
    """A driver connection in an open transaction (`Database.driver_transaction`)."""

    dbapi: Any
    """The pool's proxy of the driver's connection: `cursor()`, `commit()`, `rollback()`."""
    dialect: Dialect


@dataclass(frozen=True, slots=True)
class _Compiled:
    sql: str
    positional: tuple[str, ...] | None
    """Parameter names in order, for a positional paramstyle (SQLite's `qmark`); None: named."""
    fixed: Mapping[str, Any]
    """The statement's own literal parameters (`status = 'active'` and the like)."""
    processors: Mapping[str, Callable[[Any], Any]]


class DriverStatement:
    """One statement, compiled once per dialect, executed on the driver's cursor."""

    def __init__(self, statement: ClauseElement, verb: str) -> None:
        self._statement = statement
        self._verb = verb
        self._compiled: dict[tuple[str, str], _Compiled] = {}
        self._lock = threading.Lock()

    @property
    def statement(self) -> ClauseElement:
        """The statement as built (for a plan test or a log)."""
        return self._statement

    def _for(self, dialect: Dialect) -> _Compiled:
        key = (dialect.name, str(dialect.paramstyle))
        found = self._compiled.get(key)
        if found is not None:
            return found
        compiled = cast(SQLCompiler, self._statement.compile(dialect=dialect))
        fixed = {n: bp.effective_value for bp, n in compiled.bind_names.items() if not bp.required}
        processors = dict(getattr(compiled, "_bind_processors", {}) or {})
        positional = tuple(compiled.positiontup or ()) if compiled.positional else None
        made = _Compiled(str(compiled), positional, fixed, processors)
        with self._lock:
            self._compiled.setdefault(key, made)
        return made

    def rows(
        self, conn: Session | Connection | DriverConnection, params: Mapping[str, Any]
    ) -> Sequence[Any]:
        """Run with `params` in `conn`'s transaction; the rows it returns (RETURNING)."""
        if isinstance(conn, DriverConnection):
            dbapi, dialect = conn.dbapi, conn.dialect
        else:
            connection = conn.connection() if isinstance(conn, Session) else conn
            dbapi, dialect = connection.connection, connection.dialect
        plan = self._for(dialect)
        values = {**plan.fixed, **params}
        for name, process in plan.processors.items():
            values[name] = process(values[name])
        bound: Any = (
            tuple(values[name] for name in plan.positional)
            if plan.positional is not None
            else values
        )
        cursor = dbapi.cursor()
        start = time.perf_counter()
        try:
            cursor.execute(plan.sql, bound)
            found = cursor.fetchall() if cursor.description is not None else []
        finally:
            cursor.close()
        record("sql", self._verb, time.perf_counter() - start)
        return found

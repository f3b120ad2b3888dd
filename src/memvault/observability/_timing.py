"""Measure a stage: a context manager, a method decorator, a class decorator, and SQL events.

Each measurement costs two `perf_counter` calls and one histogram observation (plus a span when
tracing is on). It adds the seconds to the current request's context too, so the API can report
how long each request spent per stage.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ParamSpec, TypeVar

from memvault.observability import _tracing
from memvault.observability._context import current_request
from memvault.observability._metrics import STAGE_SECONDS

P = ParamSpec("P")
R = TypeVar("R")
C = TypeVar("C", bound=type)


def record(stage: str, operation: str, seconds: float) -> None:
    """Record `seconds` spent in `stage` doing `operation` (histogram and request total)."""
    STAGE_SECONDS[stage].labels(operation).observe(seconds)
    ctx = current_request()
    if ctx is not None:
        ctx.add(stage, seconds)


@contextmanager
def timed(stage: str, operation: str) -> Iterator[None]:
    """Time the block as `stage`/`operation` (a span `memvault.<stage>` when tracing is on)."""
    with _tracing.span(f"memvault.{stage}", {"memvault.operation": operation}):
        start = time.perf_counter()
        try:
            yield
        finally:
            record(stage, operation, time.perf_counter() - start)


def timed_call(stage: str, operation: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a function or method so each call is timed as `stage`/`operation`."""

    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            with timed(stage, operation):
                return fn(*args, **kwargs)

        return run

    return decorate


def timed_methods(stage: str, names: Sequence[str]) -> Callable[[C], C]:
    """Class decorator: time each named method as `stage`/<method name>.

    For adapters with many entry points (a vector index): one line on the class instead of
    one per call site. A name the class does not have is an error at import time.
    """

    def decorate(cls: C) -> C:
        for name in names:
            method = getattr(cls, name)
            setattr(cls, name, timed_call(stage, name)(method))
        return cls

    return decorate


_VERBS = {"select": "select", "insert": "insert", "update": "update", "delete": "delete"}


def _verb(statement: str) -> str:
    head = statement.lstrip()[:6].lower()
    return _VERBS.get(head, "other")


def instrument_engine(engine: Any) -> None:
    """Time every SQL statement `engine` executes as `sql`/<verb> (no statement text kept).

    Uses SQLAlchemy's cursor events, so it measures the database's work only, not the time a
    session stays open. A statement that fails is not recorded (its error is raised as usual).
    """
    from sqlalchemy import event

    def before(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        conn.info.setdefault("memvault_sql_started", []).append(time.perf_counter())

    def after(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        started = conn.info.get("memvault_sql_started")
        if started:
            seconds = time.perf_counter() - started.pop()
            record("sql", _verb(statement), seconds)
            if _tracing.tracing_enabled():
                _record_sql_span(_verb(statement), seconds)

    def failed(context: Any) -> None:
        conn = getattr(context, "connection", None)
        started = conn.info.get("memvault_sql_started") if conn is not None else None
        if started:
            started.pop()

    event.listen(engine, "before_cursor_execute", before)
    event.listen(engine, "after_cursor_execute", after)
    event.listen(engine, "handle_error", failed)


def _record_sql_span(operation: str, seconds: float) -> None:
    """A span for a statement that already ran (started `seconds` ago, ended now)."""
    tracer = _tracing._tracer
    if tracer is None:
        return
    end = time.time_ns()
    start = end - int(seconds * 1e9)
    sql_span = tracer.start_span(
        "memvault.sql", attributes={"memvault.operation": operation}, start_time=start
    )
    sql_span.end(end_time=end)

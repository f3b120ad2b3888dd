"""The read lane: memory reads (search, get, list, links) run on threads of their own.

FastAPI runs a sync endpoint on anyio's default pool of 40 threads. Under load, every reader
then runs Python at once and hands the GIL to the others on each C call that releases it
(SQLite, the socket): tens of thousands of context switches a second on two cores. Readers
beyond the lane's size wait on the event loop instead, where waiting costs nothing.

Both decorators also save a second thread hop: FastAPI validates a sync endpoint's return value
against its response model on the thread pool too (`serialize_response`), a hop of its own per
request; an async endpoint's is validated on the loop, where checking a model instance costs
less than the hop.

The default size, 8, restricts nothing at eight clients. A lane of 2 serves a read-only load
about 30 % faster but a mixed one 10-25 % slower, since its reads then queue while the adds run
(docs/architecture.md, "Threads in `memvault serve`"; `READ_THREADS`). Writes stay on the
default pool (`in_write_pool`): concurrent adds are what group commit batches."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

from anyio import CapacityLimiter, to_thread
from anyio.lowlevel import RunVar

from memvault.config import DEFAULT_READ_THREADS

P = ParamSpec("P")
T = TypeVar("T")

_READ_LANE: RunVar[CapacityLimiter] = RunVar("memvault_read_lane")


def open_read_lane(threads: int = DEFAULT_READ_THREADS) -> CapacityLimiter:
    """Size the read lane of the running event loop (the app's lifespan calls it)."""
    lane = CapacityLimiter(threads)
    _READ_LANE.set(lane)
    return lane


def read_lane() -> CapacityLimiter:
    """The running event loop's read lane (opened at its default size if the app's lifespan
    did not run, as in a test client used without `with`)."""
    try:
        return _READ_LANE.get()
    except LookupError:
        return open_read_lane()


def in_read_lane(endpoint: Callable[P, T]) -> Callable[P, Awaitable[T]]:
    """A sync endpoint as an async one that runs it on a thread of the read lane.

    FastAPI reads the parameters and the return type through `functools.wraps`' `__wrapped__`,
    so dependencies, validation and the response model are those of `endpoint`.
    """

    @functools.wraps(endpoint)
    async def run(*args: P.args, **kwargs: P.kwargs) -> T:
        call = functools.partial(endpoint, *args, **kwargs)
        return await to_thread.run_sync(call, limiter=read_lane())

    return run


def in_write_pool(endpoint: Callable[P, T]) -> Callable[P, Awaitable[T]]:
    """A sync endpoint as an async one that runs it on anyio's default pool, where FastAPI
    would run it, but with its return value validated on the loop (one thread hop per request,
    not two). Dependencies, validation and the response model are those of `endpoint`."""

    @functools.wraps(endpoint)
    async def run(*args: P.args, **kwargs: P.kwargs) -> T:
        return await to_thread.run_sync(functools.partial(endpoint, *args, **kwargs))

    return run

"""`ProcessEmbedder`: the embedding model in a child process, off the server's GIL.

A server process has one GIL, and a numpy forward pass of a short text holds it for most of its
time (the matrix products are small). Under concurrent requests that is the largest single
holder: every other request waits while a query or a batch of adds is embedded. Here the model
lives in a child (`python -m memvault.embed.process`, a fresh interpreter, so no lock or
thread is inherited), which computes on the other core.

Requests are pipelined. A caller writes its request (an id, a kind and texts) to the pipe and
waits on an event of its own; one reader thread in the parent hands each answer to its caller.
The child reads every request already waiting before it runs the model, so the search queries
that queued while it worked go into one call together, and it never waits for the parent to
come back for the next batch. Each request of documents (a group commit's batch) is one call,
as in process.

The child builds the same backend with the same settings (`make_embedder`, the same BLAS cap),
so its vectors are the in-process embedder's, bit for bit, for the same batch. If the child
dies, the calls in flight start a new one and are retried once; a backend error in the child
comes back as `EmbeddingFailed`, naming the exception type only: the texts never leave the two
processes, and nothing is logged.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np

from memvault.embed._lazy import QUERY_MAX_BATCH
from memvault.embed._vectors import empty
from memvault.embed.base import Vectors
from memvault.errors import VaultError
from memvault.observability import count_query_batch

DOCUMENTS = "documents"
QUERIES = "queries"
BATCH = "batch"
"""The child's note of a query batch's size (for `memvault_query_embedding_batch_size`)."""
STOP_SECONDS = 5.0
"""How long `close` waits for the child to exit before killing it."""


class EmbeddingFailed(VaultError):
    """The embedding process could not embed a batch (its message names no text)."""


class _Duplex:
    """Two one-way pipe connections used as one (`send` on one, `recv` on the other)."""

    def __init__(self, inbox: Connection, outbox: Connection) -> None:
        self._inbox, self._outbox = inbox, outbox

    def send(self, obj: Any) -> None:
        self._outbox.send(obj)

    def recv(self) -> Any:
        return self._inbox.recv()

    def poll(self) -> bool:
        return self._inbox.poll(0)

    def close(self) -> None:
        self._inbox.close()
        self._outbox.close()


# -- the child ---------------------------------------------------------------------------------


def _child_main(conn: _Duplex, name: str, data_dir: str, threads: int) -> None:
    """Build the backend, say it is ready, then answer requests until told to stop.

    It exits when the parent sends `None` or its end of the pipe closes (the parent died).
    Ctrl-C goes to the whole process group; the parent decides when the child stops.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from memvault.embed._lazy import LazyEmbedder
    from memvault.embed.blas import cap_blas_threads
    from memvault.embed.factory import make_embedder

    limiter = cap_blas_threads(threads)  # as `memvault serve` holds it: no spinning BLAS thread
    try:
        model = make_embedder(name, data_dir=Path(data_dir), threads=threads)
        if not isinstance(model, LazyEmbedder):
            raise TypeError("the embedding process runs LazyEmbedder backends only")
        model.load()
    except Exception as exc:
        conn.send((0, "error", type(exc).__name__))
        return
    conn.send((0, "ready", None))
    try:
        while (requests := _waiting_requests(conn)) is not None:
            queries = [r for r in requests if r[1] == QUERIES]
            if queries:
                _answer_queries(conn, model, queries)
            for number, _kind, texts in (r for r in requests if r[1] == DOCUMENTS):

                def embed(batch: list[str] = texts) -> list[Any]:
                    return [model.embed_documents(batch)]

                _answer(conn, [number], embed)
    finally:
        limiter.restore_original_limits()


def _waiting_requests(conn: _Duplex) -> list[tuple[int, str, list[str]]] | None:
    """The next request and every one already waiting behind it; None when it is time to stop."""
    requests: list[tuple[int, str, list[str]]] = []
    queries = 0
    while not requests or conn.poll():
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return None
        if message is None:
            return None
        requests.append(message)
        queries += len(message[2]) if message[1] == QUERIES else 0
        if queries >= QUERY_MAX_BATCH:
            break
    return requests


def _answer_queries(conn: _Duplex, model: Any, queries: list[tuple[int, str, list[str]]]) -> None:
    texts = [text for _, _, batch in queries for text in batch]
    conn.send((0, BATCH, len(texts)))

    def split() -> list[Vectors]:
        rows = model.embed_query_batch(texts)
        bounds = list(itertools.accumulate(len(batch) for _, _, batch in queries))
        return [
            rows[end - len(batch) : end] for (_, _, batch), end in zip(queries, bounds, strict=True)
        ]

    _answer(conn, [number for number, _, _ in queries], split)


def _answer(conn: _Duplex, numbers: list[int], run: Callable[[], list[Any]]) -> None:
    try:
        results = run()
    except Exception as exc:
        for number in numbers:
            conn.send((number, "error", type(exc).__name__))
        return
    for number, vectors in zip(numbers, results, strict=True):
        conn.send((number, "ok", vectors))


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the child: `python -m memvault.embed.process READ_FD WRITE_FD NAME
    DATA_DIR THREADS` (the parent passes its pipe ends' numbers)."""
    read_fd, write_fd, name, data_dir, threads = (argv if argv is not None else sys.argv[1:])[:5]
    with (
        Connection(int(read_fd), writable=False) as inbox,
        Connection(int(write_fd), readable=False) as outbox,
    ):
        _child_main(_Duplex(inbox, outbox), name, data_dir, int(threads))


# -- the parent --------------------------------------------------------------------------------


class _Call:
    """One request in flight: its caller waits on `done`."""

    __slots__ = ("done", "error", "lost", "vectors")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.vectors: Any = None
        self.error: str | None = None
        self.lost = False  # the child died before answering


class _Child:
    """One running child: its process, its pipe, the calls it owes and the thread that reads
    its answers."""

    def __init__(self, args: tuple[str, str, int]) -> None:
        child_reads, parent_writes = os.pipe()
        parent_reads, child_writes = os.pipe()
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", __name__]
                + [str(arg) for arg in (child_reads, child_writes, *args)],
                pass_fds=(child_reads, child_writes),
                stdin=subprocess.DEVNULL,
                # Never the parent's stdout: under `memvault mcp` it is the JSON-RPC channel.
                stdout=sys.stderr.fileno() if _has_fileno(sys.stderr) else subprocess.DEVNULL,
                env=_child_environment(),
            )
        except BaseException:
            for fd in (parent_reads, parent_writes):
                os.close(fd)
            raise
        finally:
            os.close(child_reads)
            os.close(child_writes)
        self.conn = _Duplex(
            Connection(parent_reads, writable=False), Connection(parent_writes, readable=False)
        )
        self.calls: dict[int, _Call] = {}
        self.lock = threading.Lock()  # guards `calls` and `open`; never held while writing
        self.sending = threading.Lock()  # one writer on the pipe at a time
        self.open = True
        self._numbers = itertools.count(1)
        try:
            _, status, payload = self.conn.recv()
        except (EOFError, OSError):
            self.stop()
            raise EmbeddingFailed("the embedding process exited while loading") from None
        if status != "ready":
            self.stop()
            raise EmbeddingFailed(f"the embedding process could not load its model: {payload}")
        self.reader = threading.Thread(target=self._read, name="memvault-embed-reader", daemon=True)
        self.reader.start()

    def alive(self) -> bool:
        return self.open and self.process.poll() is None

    def submit(self, kind: str, texts: list[str]) -> _Call:
        call = _Call()
        with self.lock:
            if not self.open:
                call.lost = True
                return call
            number = next(self._numbers)
            self.calls[number] = call
        # A large request can fill the pipe until the child reads it, and the child may be
        # writing answers meanwhile: the reader must never wait for this write (no `lock`).
        try:
            with self.sending:
                self.conn.send((number, kind, texts))
        except (OSError, ValueError):
            with self.lock:
                self.calls.pop(number, None)
            call.lost = True
        return call

    def _read(self) -> None:
        while True:
            try:
                number, status, payload = self.conn.recv()
            except (EOFError, OSError, ValueError):
                break
            if status == BATCH:
                count_query_batch(int(payload))
                continue
            with self.lock:
                call = self.calls.pop(number, None)
            if call is not None:
                call.vectors, call.error = (payload, None) if status == "ok" else (None, payload)
                call.done.set()
        with self.lock:  # the child is gone: its callers retry on another one
            self.open = False
            lost, self.calls = list(self.calls.values()), {}
        for call in lost:
            call.lost = True
            call.done.set()

    def stop(self) -> None:
        """Ask the child to exit (kill it if it does not), then close the pipe once the reader
        has seen its end (never under a thread still reading it)."""
        with self.lock:
            self.open = False
        with self.sending, contextlib.suppress(OSError, ValueError):
            self.conn.send(None)
        try:
            self.process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(STOP_SECONDS)
        reader = getattr(self, "reader", None)
        if reader is not None and reader is not threading.current_thread():
            reader.join(STOP_SECONDS)
        if reader is None or not reader.is_alive():
            self.conn.close()


class ProcessEmbedder:
    """An `Embedder` whose model runs in a child process (see the module docstring).

    `name`, `data_dir` and `threads` are `make_embedder`'s. The child starts on `load()` or the
    first call; `close()` stops it, after which calls raise `EmbeddingFailed`.
    """

    def __init__(self, name: str, *, data_dir: Path, threads: int = 1) -> None:
        from memvault.embed.factory import make_embedder

        spec = make_embedder(name, data_dir=data_dir, threads=threads)  # not loaded: ids only
        self.model_id: str = spec.model_id
        self.dimension: int = spec.dimension
        self._args = (name, str(data_dir), threads)
        self._lock = threading.Lock()  # guards starting and stopping the child
        self._child: _Child | None = None
        self._closed = False

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs (None before the first call and after close)."""
        child = self._child
        return None if child is None or not child.alive() else int(child.process.pid)

    def load(self) -> None:
        """Start the child and wait until its model is loaded."""
        self._running()

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """Embed a batch: shape (len(texts), dimension), unit rows."""
        batch = list(texts)
        if not batch:
            return empty(self.dimension)
        return self._call(DOCUMENTS, batch)

    def embed_query(self, text: str) -> Vectors:
        """Embed one query: shape (dimension,), unit length (in one model call with the queries
        of concurrent callers that wait in the pipe, if any)."""
        return self._call(QUERIES, [text])[0]

    def close(self) -> None:
        """Stop the child; later calls raise `EmbeddingFailed`."""
        with self._lock:
            self._closed = True
            child, self._child = self._child, None
        if child is not None:
            child.stop()

    def submit_query(self, text: str) -> Callable[[], Vectors]:
        """Send one query to the child now; the returned function waits for its vector.

        The caller does other work meanwhile (a search runs its BM25 half while the child
        embeds). Shape (dimension,), unit length. Waiting behaves as `embed_query`: a child that
        dies is replaced once, and its failure raises `EmbeddingFailed`.
        """
        texts = [text]
        child, call = self._submit(QUERIES, texts)
        return lambda: self._await(QUERIES, texts, child, call)[0]

    def _call(self, kind: str, texts: list[str]) -> Vectors:
        return self._await(kind, texts, *self._submit(kind, texts))

    def _submit(self, kind: str, texts: list[str]) -> tuple[_Child, _Call]:
        child = self._running()
        return child, child.submit(kind, texts)

    def _await(
        self, kind: str, texts: list[str], child: _Child, call: _Call, attempt: int = 1
    ) -> Vectors:
        if not call.lost:
            call.done.wait()
        if call.lost:  # the child died (killed, out of memory): start another
            self._replace(child)
            if attempt == 2:
                raise EmbeddingFailed("the embedding process stopped twice")
            return self._await(kind, texts, *self._submit(kind, texts), attempt=2)
        if call.error is not None:
            raise EmbeddingFailed(f"the embedding process failed: {call.error}")
        vectors: Vectors = np.asarray(call.vectors, dtype=np.float32)
        if vectors.shape != (len(texts), self.dimension):
            raise EmbeddingFailed("the embedding process returned a wrong shape")
        return vectors

    def _running(self) -> _Child:
        with self._lock:
            if self._closed:
                raise EmbeddingFailed("the embedding process is closed")
            if self._child is None or not self._child.alive():
                if self._child is not None:
                    self._child.stop()
                self._child = None
                self._child = _Child(self._args)
            return self._child

    def _replace(self, dead: _Child) -> None:
        with self._lock:
            if self._child is dead:
                self._child = None
        dead.stop()


def _has_fileno(stream: Any) -> bool:
    try:
        stream.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    return True


def _child_environment() -> dict[str, str]:
    """The parent's environment, with the directory this `memvault` was imported from first on
    PYTHONPATH, so the child runs the same code (a test's or a benchmark's source tree too)."""
    import memvault

    root = str(Path(memvault.__file__).resolve().parents[1])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


if __name__ == "__main__":
    main()

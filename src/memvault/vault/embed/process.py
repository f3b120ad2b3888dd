"""`ProcessEmbedder`: the embedding model in a child process, off the server's GIL.

A server process has one GIL, and a numpy forward pass of a short text holds it for most of its
time (the matrix products are small). Under concurrent requests that is the largest single
holder: every other request waits while a query or a batch of adds is embedded. Here the model
lives in a child (`python -m memvault.vault.embed.process`, a fresh interpreter, so no lock or
thread is inherited); the parent sends it a batch of texts over a pipe and blocks in `recv`,
which releases the GIL, while the child computes on the other core.

The child builds the same backend with the same settings (`make_embedder`, the same BLAS cap),
so its vectors are the in-process embedder's, bit for bit. Calls are serialized as the
in-process model's are (one lock), and concurrent search queries still share one call
(`Batcher`). If the child dies, the next call starts a new one and is retried once; a backend
error in the child comes back as `EmbeddingFailed`, naming the exception type only: the texts
never leave the two processes, and nothing is logged.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np

from memvault.errors import VaultError
from memvault.observability import count_query_batch
from memvault.vault.batcher import Batcher
from memvault.vault.embed._lazy import QUERY_MAX_BATCH
from memvault.vault.embed._vectors import empty
from memvault.vault.embed.base import Vectors

DOCUMENTS = "documents"
QUERIES = "queries"
STOP_SECONDS = 5.0
"""How long `close` waits for the child to exit before terminating it."""


class EmbeddingFailed(VaultError):
    """The embedding process could not embed a batch (its message names no text)."""


def _child_main(conn: _Duplex, name: str, data_dir: str, threads: int) -> None:
    """The child: build the backend, say it is ready, then embed batches until told to stop.

    It exits when the parent sends `None` or its end of the pipe closes (the parent died).
    Ctrl-C goes to the whole process group; the parent decides when the child stops.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from memvault.vault.embed._lazy import LazyEmbedder
    from memvault.vault.embed.blas import cap_blas_threads
    from memvault.vault.embed.factory import make_embedder

    limiter = cap_blas_threads(threads)  # as `memvault serve` holds it: no spinning BLAS thread
    try:
        model = make_embedder(name, data_dir=Path(data_dir), threads=threads)
        if not isinstance(model, LazyEmbedder):
            raise TypeError("the embedding process runs LazyEmbedder backends only")
        model.load()
    except Exception as exc:
        conn.send(("error", type(exc).__name__))
        return
    conn.send(("ready", None))
    try:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                return
            if message is None:
                return
            kind, texts = message
            try:
                if kind == DOCUMENTS:
                    vectors = model.embed_documents(texts)
                else:
                    vectors = model.embed_query_batch(texts)
                conn.send(("ok", vectors))
            except Exception as exc:
                conn.send(("error", type(exc).__name__))
    finally:
        limiter.restore_original_limits()


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the child: `python -m memvault.vault.embed.process READ_FD WRITE_FD NAME
    DATA_DIR THREADS` (the parent passes its pipe ends' numbers)."""
    read_fd, write_fd, name, data_dir, threads = (argv if argv is not None else sys.argv[1:])[:5]
    with (
        Connection(int(read_fd), writable=False) as inbox,
        Connection(int(write_fd), readable=False) as outbox,
    ):
        _child_main(_Duplex(inbox, outbox), name, data_dir, int(threads))


class _Duplex:
    """Two one-way pipe connections used as one (`send` on one, `recv` on the other)."""

    def __init__(self, inbox: Connection, outbox: Connection) -> None:
        self._inbox, self._outbox = inbox, outbox

    def send(self, obj: Any) -> None:
        self._outbox.send(obj)

    def recv(self) -> Any:
        return self._inbox.recv()

    def close(self) -> None:
        self._inbox.close()
        self._outbox.close()


class ProcessEmbedder:
    """An `Embedder` whose model runs in a child process (see the module docstring).

    `name`, `data_dir` and `threads` are `make_embedder`'s. The child starts on `load()` or the
    first call; `close()` stops it, after which calls raise `EmbeddingFailed`.
    """

    def __init__(self, name: str, *, data_dir: Path, threads: int = 1) -> None:
        from memvault.vault.embed.factory import make_embedder

        spec = make_embedder(name, data_dir=data_dir, threads=threads)  # not loaded: ids only
        self.model_id: str = spec.model_id
        self.dimension: int = spec.dimension
        self._args = (name, str(data_dir), threads)
        self._lock = threading.Lock()
        self._conn: _Duplex | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._closed = False
        self._queries = Batcher(
            self._embed_queries, max_batch=QUERY_MAX_BATCH, observe=count_query_batch
        )

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs (None before the first call and after close)."""
        process = self._process
        return None if process is None or process.poll() is not None else int(process.pid)

    def load(self) -> None:
        """Start the child and wait until its model is loaded."""
        with self._lock:
            self._ensure()

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """Embed a batch: shape (len(texts), dimension), unit rows."""
        batch = list(texts)
        if not batch:
            return empty(self.dimension)
        return self._call(DOCUMENTS, batch)

    def embed_query(self, text: str) -> Vectors:
        """Embed one query (in one child call with concurrent callers' queries, if any)."""
        vector: Vectors = self._queries.submit(text)
        return vector

    def close(self) -> None:
        """Stop the child; later calls raise `EmbeddingFailed`."""
        with self._lock:
            self._closed = True
            self._stop()

    def _embed_queries(self, texts: Sequence[str]) -> list[Vectors]:
        rows = self._call(QUERIES, list(texts))
        return [row.copy() for row in rows]

    def _call(self, kind: str, texts: list[str]) -> Vectors:
        with self._lock:
            for attempt in (1, 2):
                conn = self._ensure()
                try:
                    conn.send((kind, texts))
                    status, payload = conn.recv()
                except (EOFError, OSError):
                    self._stop()  # the child died (killed, out of memory): start another
                    if attempt == 2:
                        raise EmbeddingFailed("the embedding process stopped twice") from None
                    continue
                if status != "ok":
                    raise EmbeddingFailed(f"the embedding process failed: {payload}")
                vectors: Vectors = np.asarray(payload, dtype=np.float32)
                if vectors.shape != (len(texts), self.dimension):
                    raise EmbeddingFailed("the embedding process returned a wrong shape")
                return vectors
        raise AssertionError("unreachable")

    def _ensure(self) -> _Duplex:
        if self._closed:
            raise EmbeddingFailed("the embedding process is closed")
        if self._conn is not None and self._process is not None and self._process.poll() is None:
            return self._conn
        self._stop()
        child_reads, parent_writes = os.pipe()
        parent_reads, child_writes = os.pipe()
        try:
            process = subprocess.Popen(
                [sys.executable, "-m", __name__]
                + [str(arg) for arg in (child_reads, child_writes, *self._args)],
                pass_fds=(child_reads, child_writes),
                stdin=subprocess.DEVNULL,
                env=_child_environment(),
            )
        except BaseException:
            for fd in (parent_reads, parent_writes):
                os.close(fd)
            raise
        finally:
            os.close(child_reads)
            os.close(child_writes)
        conn = _Duplex(
            Connection(parent_reads, writable=False), Connection(parent_writes, readable=False)
        )
        self._conn, self._process = conn, process
        try:
            status, payload = conn.recv()
        except (EOFError, OSError):
            self._stop()
            raise EmbeddingFailed("the embedding process exited while loading") from None
        if status != "ready":
            self._stop()
            raise EmbeddingFailed(f"the embedding process could not load its model: {payload}")
        return conn

    def _stop(self) -> None:
        conn, process = self._conn, self._process
        self._conn = self._process = None
        if conn is not None:
            with contextlib.suppress(OSError, ValueError):
                conn.send(None)
            conn.close()
        if process is not None:
            try:
                process.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(STOP_SECONDS)


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

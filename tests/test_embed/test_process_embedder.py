"""`ProcessEmbedder`: the model in a child process gives the in-process model's vectors, survives
its child's death, reports a backend error without the text, and leaves no child behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from memvault.embed.base import Embedder
from memvault.embed.process import EmbeddingFailed, ProcessEmbedder
from tests._helpers import poll_until

TEXTS = [
    "The garden piano plan, item kqzvxabc, is due next week",
    "花园里的猫在睡觉。",
    "邓雨桐家的鹦鹉叫布丁，今年10岁了。",  # <unk> pieces: the tokenizer's port path
    "emoji 🎉 ok",
    "",
]


def _gone(pid: int, seconds: float = 10.0) -> bool:
    """Whether process `pid` has exited (reaped or a zombie of a dead parent) within `seconds`."""

    def exited() -> bool:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                return stat.read().split(") ", 1)[1].startswith("Z")
        except FileNotFoundError:
            return True

    return poll_until(exited, seconds)


def test_vectors_equal_the_in_process_model_bit_for_bit(
    process_embedder: ProcessEmbedder, embedder: Embedder
) -> None:
    assert process_embedder.model_id == embedder.model_id == "use-m3"
    assert process_embedder.dimension == embedder.dimension == 512
    documents = process_embedder.embed_documents(TEXTS)
    assert documents.dtype == np.float32 and documents.shape == (len(TEXTS), 512)
    assert np.array_equal(documents, embedder.embed_documents(TEXTS))
    for text in TEXTS:
        assert np.array_equal(process_embedder.embed_query(text), embedder.embed_query(text))
    assert process_embedder.embed_documents([]).shape == (0, 512)


def test_concurrent_queries_share_a_call_and_each_gets_its_own_vector(
    process_embedder: ProcessEmbedder, embedder: Embedder
) -> None:
    queries = [f"what is due in week {word}" for word in ("one", "two", "three", "four")] * 4
    with ThreadPoolExecutor(8) as pool:
        vectors = list(pool.map(process_embedder.embed_query, queries))
    for query, vector in zip(queries, vectors, strict=True):
        assert vector.shape == (512,)
        np.testing.assert_allclose(vector, embedder.embed_query(query), atol=1e-6)
    assert len({id(v) for v in vectors}) == len(vectors)  # no caller shares another's array


def _query_batches() -> tuple[float, float]:
    """(model calls, queries) counted so far by `memvault_query_embedding_batch_size`."""
    from memvault.observability._metrics import QUERY_BATCH_SIZE

    samples = {s.name: s.value for s in QUERY_BATCH_SIZE.collect()[0].samples}
    return samples["memvault_query_embedding_batch_size_count"], samples[
        "memvault_query_embedding_batch_size_sum"
    ]


def test_queries_that_wait_while_the_child_works_go_in_one_call(
    process_embedder: ProcessEmbedder, embedder: Embedder
) -> None:
    busy = [f"a long document number {n} about gardens and harbors" for n in range(300)]
    queries = [f"where is harbor {n}" for n in range(6)]
    calls_before, queries_before = _query_batches()
    with ThreadPoolExecutor(7) as pool:
        documents = pool.submit(process_embedder.embed_documents, busy)
        time.sleep(0.05)  # the child is now embedding the 300 documents
        vectors = list(pool.map(process_embedder.embed_query, queries))
        assert documents.result().shape == (300, 512)
    calls, counted = _query_batches()
    assert counted - queries_before == len(queries)
    assert calls - calls_before < len(queries)  # some waited in the pipe and shared a call
    for query, vector in zip(queries, vectors, strict=True):
        np.testing.assert_allclose(vector, embedder.embed_query(query), atol=1e-6)


def test_large_requests_and_answers_in_both_directions_do_not_block_each_other(
    process_embedder: ProcessEmbedder,
) -> None:
    # Each request and each answer is several times a pipe's 64 KiB buffer, from four writers
    # at once: a writer blocked on a full pipe must never stop the reader that drains the other.
    long_text = "the harbor ticket for the winter garden plan " * 40
    batches = [[f"{n} {i} {long_text}" for i in range(120)] for n in range(4)]
    with ThreadPoolExecutor(6) as pool:
        documents = [pool.submit(process_embedder.embed_documents, b) for b in batches]
        queries = [pool.submit(process_embedder.embed_query, f"q{n}") for n in range(8)]
        for future in documents:
            assert future.result(timeout=300).shape == (120, 512)
        for future in queries:
            assert future.result(timeout=300).shape == (512,)


def test_a_killed_child_is_replaced_and_the_call_retried(
    process_embedder: ProcessEmbedder, embedder: Embedder
) -> None:
    first = process_embedder.pid
    assert first is not None
    os.kill(first, signal.SIGKILL)
    assert _gone(first)
    vectors = process_embedder.embed_documents(TEXTS[:2])
    assert np.array_equal(vectors, embedder.embed_documents(TEXTS[:2]))
    assert process_embedder.pid not in (None, first)


def test_a_backend_error_names_its_type_not_the_text(process_embedder: ProcessEmbedder) -> None:
    secret = "the launch code is 8675309"
    with pytest.raises(EmbeddingFailed) as raised:
        process_embedder.embed_documents([secret, 12345])  # type: ignore[list-item]
    assert secret not in str(raised.value) and "8675309" not in str(raised.value)
    assert "the embedding process failed: " in str(raised.value)
    assert process_embedder.embed_documents(["still serving"]).shape == (1, 512)


def test_close_stops_the_child_and_later_calls_fail(tmp_path: Path) -> None:
    model = ProcessEmbedder("use-m3", data_dir=tmp_path, threads=1)
    assert model.pid is None  # nothing starts before it is needed
    model.embed_query("start it")
    pid = model.pid
    assert pid is not None
    model.close()
    assert model.pid is None and _gone(pid)
    with pytest.raises(EmbeddingFailed, match="closed"):
        model.embed_documents(["after close"])


def test_the_child_exits_when_its_parent_dies(tmp_path: Path) -> None:
    parent = textwrap.dedent(
        f"""
        import os, sys
        from pathlib import Path
        from memvault.embed.process import ProcessEmbedder
        model = ProcessEmbedder("use-m3", data_dir=Path({str(tmp_path)!r}), threads=1)
        model.load()
        print(model.pid, flush=True)
        os._exit(0)  # no close: the child must notice on its own
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", parent], capture_output=True, text=True, timeout=120, check=True
    )
    child = int(done.stdout.strip())
    assert _gone(child), "the embedding process outlived its parent"


def test_services_embed_in_a_child_by_default_and_stop_it_on_close(
    tmp_path: Path, embedder: Embedder
) -> None:
    from memvault.config import Settings
    from memvault.runtime.factory import open_services
    from memvault.scope import Scope

    services = open_services(Settings(data_dir=tmp_path / "data", amem=False), screen=None)
    try:
        child = services.embedder_process
        assert child is not None and child.pid is None  # started by the first embedding
        services.tenants.create("acme")
        view = services.vault.scoped(Scope("acme", "ursula", "travel"))
        noted = view.add("Ursula prefers the night train to Vienna")
        pid = child.pid
        assert pid is not None and pid != os.getpid()
        hits = view.search("night train", limit=3)
        assert [hit.note.id for hit in hits][:1] == [noted.id]
        query = services.vault.parts.embedder.embed_query(view.scope, "a new query")
        assert np.array_equal(query, embedder.embed_query("a new query"))
    finally:
        services.close()
    assert child.pid is None and _gone(pid)


def test_the_child_never_writes_to_its_parents_stdout(tmp_path: Path) -> None:
    # Under `memvault mcp` the parent's stdout is the JSON-RPC channel: anything the child
    # prints (here, from a sitecustomize only the child loads) must land on stderr instead.
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text('print("child-stdout-marker", flush=True)\n')
    parent = textwrap.dedent(
        f"""
        import os
        from pathlib import Path
        os.environ["PYTHONPATH"] = {str(site)!r}  # the child's environment, not this process's
        from memvault.embed.process import ProcessEmbedder
        model = ProcessEmbedder("use-m3", data_dir=Path({str(tmp_path)!r}), threads=1)
        assert model.embed_query("hello").shape == (512,)
        model.close()
        print("parent-done")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", parent], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "parent-done"
    assert "child-stdout-marker" in done.stderr

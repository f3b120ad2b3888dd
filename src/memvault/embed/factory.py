"""`make_embedder`: the embedder named in settings (`EMBEDDER`), built without loading it."""

from __future__ import annotations

from pathlib import Path

from memvault.embed.base import Embedder
from memvault.errors import InvalidRequest

DEFAULT_EMBEDDER = "use-m3"
EMBEDDER_NAMES = ("use-m3", "e5-small", "minilm")


DEFAULT_THREADS = 1
"""One BLAS/ONNX thread per model call. On this 2-core machine, with other work running, USE with
2 threads took 203 ms p50 for one sentence against 11 ms with 1 thread, and batched 97/s against
217/s: oversubscribed BLAS threads spin (measured by `bench/embed_threads.py`, retired at
d6cb986)."""


def make_embedder(
    name: str = DEFAULT_EMBEDDER, *, data_dir: Path, threads: int = DEFAULT_THREADS
) -> Embedder:
    """Build the embedder called `name`: `use-m3` (default), `e5-small` or `minilm`.

    `minilm` assembles its model folder under `data_dir / "models"` from installed packages.
    Models load lazily on first use. An unknown name raises `InvalidRequest`.
    """
    if name == "use-m3":
        from memvault.embed.use import UseEmbedder

        return UseEmbedder(threads=threads)
    if name == "e5-small":
        from memvault.embed.e5 import E5Embedder

        return E5Embedder()
    if name == "minilm":
        from memvault.embed.minilm import FastembedEmbedder, prepare_minilm_dir

        models = data_dir / "models"
        model_dir = prepare_minilm_dir(models / "all-MiniLM-L6-v2-onnx-int8")
        return FastembedEmbedder(model_dir, cache_dir=models / "fastembed-cache", threads=threads)
    raise InvalidRequest(f"embedder must be one of {', '.join(EMBEDDER_NAMES)}")

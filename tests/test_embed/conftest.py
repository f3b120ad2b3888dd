"""Real embedders, each loaded once per test session (loading takes seconds)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memvault.embed import (
    E5Embedder,
    FastembedEmbedder,
    UseEmbedder,
    prepare_minilm_dir,
)
from memvault.embed.process import ProcessEmbedder


@pytest.fixture(scope="module")
def process_embedder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessEmbedder]:
    """A started `ProcessEmbedder` (use-m3, one thread), shared by a module's tests."""
    model = ProcessEmbedder("use-m3", data_dir=tmp_path_factory.mktemp("data"), threads=1)
    model.load()
    yield model
    model.close()


@pytest.fixture(scope="session")
def use_embedder() -> UseEmbedder:
    embedder = UseEmbedder(threads=2)
    embedder.load()
    return embedder


@pytest.fixture(scope="session")
def e5_embedder() -> E5Embedder:
    embedder = E5Embedder()
    embedder.load()
    return embedder


@pytest.fixture(scope="session")
def minilm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return prepare_minilm_dir(tmp_path_factory.mktemp("models") / "minilm")


@pytest.fixture(scope="session")
def minilm_embedder(
    minilm_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> FastembedEmbedder:
    embedder = FastembedEmbedder(minilm_dir, cache_dir=tmp_path_factory.mktemp("fastembed"))
    embedder.load()
    return embedder

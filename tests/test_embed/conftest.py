"""Real embedders, each loaded once per test session (loading takes seconds)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memvault.vault.embed import (
    E5Embedder,
    FastembedEmbedder,
    UseEmbedder,
    prepare_minilm_dir,
)


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

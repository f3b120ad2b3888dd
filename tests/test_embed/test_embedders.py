"""Every backend honours the `Embedder` contract on real models, and ranks meaning sensibly."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from memvault.embed import (
    E5Embedder,
    Embedder,
    FastembedEmbedder,
    UseEmbedder,
    make_embedder,
    prepare_minilm_dir,
)
from memvault.errors import InvalidRequest
from tests._helpers import run_threads

BACKENDS = ["use_embedder", "e5_embedder", "minilm_embedder"]
EXPECTED = {
    "use_embedder": ("use-m3", 512),
    "e5_embedder": ("e5-small-q4", 384),
    "minilm_embedder": ("minilm-l6-int8", 384),
}

EN_ANCHOR = "My daughter started learning the violin last month."
EN_PARAPHRASE = "A month ago my girl began taking violin lessons."
EN_UNRELATED = "The quarterly tax return is due before the end of April."
ZH_ANCHOR = "我女儿上个月开始学小提琴。"
ZH_PARAPHRASE = "一个月前我的女儿开始上小提琴课。"
ZH_UNRELATED = "季度纳税申报必须在四月底之前提交。"


def _embedder(request: pytest.FixtureRequest, name: str) -> Embedder:
    embedder = request.getfixturevalue(name)
    assert isinstance(embedder, Embedder)
    return embedder


@pytest.mark.parametrize("name", BACKENDS)
def test_embed_documents_batch_returns_unit_float32_rows(
    request: pytest.FixtureRequest, name: str
) -> None:
    embedder = _embedder(request, name)
    model_id, dim = EXPECTED[name]
    vectors = embedder.embed_documents([EN_ANCHOR, EN_UNRELATED, ZH_ANCHOR])
    assert (embedder.model_id, embedder.dimension) == (model_id, dim)
    assert vectors.shape == (3, dim)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)


@pytest.mark.parametrize("name", BACKENDS)
def test_embed_query_single_text_returns_unit_vector(
    request: pytest.FixtureRequest, name: str
) -> None:
    embedder = _embedder(request, name)
    vector = embedder.embed_query(EN_ANCHOR)
    assert vector.shape == (embedder.dimension,)
    assert vector.dtype == np.float32
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-4


@pytest.mark.parametrize("name", BACKENDS)
def test_embed_documents_empty_batch_returns_zero_rows(
    request: pytest.FixtureRequest, name: str
) -> None:
    embedder = _embedder(request, name)
    vectors = embedder.embed_documents([])
    assert vectors.shape == (0, embedder.dimension)
    assert vectors.dtype == np.float32


def _paraphrase_margin(embedder: Embedder, anchor: str, paraphrase: str, unrelated: str) -> float:
    a, p, u = embedder.embed_documents([anchor, paraphrase, unrelated])
    return float(a @ p) - float(a @ u)


@pytest.mark.parametrize("name", BACKENDS)
def test_embed_english_paraphrase_closer_than_unrelated(
    request: pytest.FixtureRequest, name: str
) -> None:
    embedder = _embedder(request, name)
    assert _paraphrase_margin(embedder, EN_ANCHOR, EN_PARAPHRASE, EN_UNRELATED) > 0.05


@pytest.mark.parametrize("name", ["use_embedder", "e5_embedder"])
def test_embed_chinese_paraphrase_closer_than_unrelated(
    request: pytest.FixtureRequest, name: str
) -> None:
    embedder = _embedder(request, name)
    assert _paraphrase_margin(embedder, ZH_ANCHOR, ZH_PARAPHRASE, ZH_UNRELATED) > 0.05


def test_e5_query_encoding_differs_from_passage_and_finds_answer(e5_embedder: E5Embedder) -> None:
    query = e5_embedder.embed_query("What instrument does the daughter play?")
    as_passage = e5_embedder.embed_documents(["What instrument does the daughter play?"])[0]
    passages = e5_embedder.embed_documents([EN_ANCHOR, EN_UNRELATED])
    assert float(query @ as_passage) < 0.999  # the `query:` prefix changes the vector
    assert float(query @ passages[0]) > float(query @ passages[1])


def test_use_concurrent_calls_match_sequential_results(use_embedder: UseEmbedder) -> None:
    texts = [f"note number {i} about gardening and tomatoes" for i in range(8)]
    expected = use_embedder.embed_documents(texts)
    results: dict[int, np.ndarray] = {}

    def work(i: int) -> None:
        results[i] = use_embedder.embed_documents([texts[i]])[0]

    assert not run_threads(work, len(texts))
    for i in range(len(texts)):
        np.testing.assert_allclose(results[i], expected[i], atol=1e-4)


def test_make_embedder_known_names_build_matching_backends(tmp_path: Path) -> None:
    assert isinstance(make_embedder("use-m3", data_dir=tmp_path), UseEmbedder)
    assert isinstance(make_embedder("e5-small", data_dir=tmp_path), E5Embedder)
    minilm = make_embedder("minilm", data_dir=tmp_path)
    assert isinstance(minilm, FastembedEmbedder)
    folder = tmp_path / "models" / "all-MiniLM-L6-v2-onnx-int8"
    assert {p.name for p in folder.iterdir()} >= {
        "model.onnx",
        "tokenizer.json",
        "tokenizer_config.json",
    }


def test_make_embedder_unknown_name_raises_invalid_request(tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest):
        make_embedder("word2vec", data_dir=tmp_path)


def test_prepare_minilm_dir_second_call_keeps_files(minilm_dir: Path, tmp_path: Path) -> None:
    dest = prepare_minilm_dir(tmp_path / "m")
    before = (dest / "model.onnx").stat().st_mtime_ns
    assert prepare_minilm_dir(dest) == dest
    assert (dest / "model.onnx").stat().st_mtime_ns == before
    digest = hashlib.sha256((dest / "model.onnx").read_bytes()).hexdigest()
    assert digest == hashlib.sha256((minilm_dir / "model.onnx").read_bytes()).hexdigest()


def test_prepare_minilm_dir_corrupted_model_raises_and_removes(tmp_path: Path) -> None:
    dest = prepare_minilm_dir(tmp_path / "m")
    size = (dest / "model.onnx").stat().st_size
    (dest / "model.onnx").write_bytes(b"\0" * size)  # same size, so only the hash can tell
    with pytest.raises(RuntimeError, match="sha256"):
        prepare_minilm_dir(dest)
    assert not (dest / "model.onnx").exists()


def test_fastembed_embedder_incomplete_folder_fails_at_construction(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"")
    with pytest.raises(RuntimeError, match=r"tokenizer\.json"):
        FastembedEmbedder(tmp_path, cache_dir=tmp_path / "cache")

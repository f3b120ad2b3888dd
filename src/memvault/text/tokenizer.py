"""`tokenize`: the words BM25 indexes, for English, Chinese and text that mixes them.

Han runs go through jieba's exact mode (`lcut`). Search mode (`lcut_for_search`, which also
emits the words inside long ones: 小提琴 → 提琴, 小提琴) was measured against it on CMRC2018
(bench/tokenize_cjk.py, docs/embeddings.md): every combination of modes for documents and
queries scored within ±0.005 hit@1 of the others, inside the noise, while search mode makes
sparse vectors ~17% longer. So: exact mode, the same for documents and queries.

Everything else is split into words, lowercased, stripped of English stopwords and, by default,
Snowball-stemmed. Punctuation never becomes a token.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from typing import TYPE_CHECKING, Literal

from memvault.text.stopwords import CHINESE_STOPWORDS, ENGLISH_STOPWORDS

if TYPE_CHECKING:
    import jieba
    import Stemmer

CjkMode = Literal["search", "exact"]
DEFAULT_CJK_MODE: CjkMode = "exact"

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"
# A Han run, or a run of letters/digits that are not Han (with inner apostrophes: don't, o'neil).
_RUNS = re.compile(rf"(?P<han>[{_HAN}]+)|(?P<word>[^\W_{_HAN}]+(?:'[^\W_{_HAN}]+)*)")
_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "ʼ": "'"})

_jieba_lock = threading.Lock()
_jieba: jieba.Tokenizer | None = None
_stemmers = threading.local()


def _segmenter() -> jieba.Tokenizer:
    """memvault's own jieba tokenizer, initialized once and quietly.

    A private instance, so words another library adds to jieba's global dictionary do not
    change memvault's token ids; its dictionary is read-only (`CompactFreq`).
    """
    global _jieba
    if _jieba is None:
        with _jieba_lock:
            if _jieba is None:
                import jieba

                from memvault.text._compact_freq import compact

                jieba.setLogLevel(logging.WARNING)
                segmenter = jieba.Tokenizer()
                segmenter.initialize()
                compact(segmenter)  # its 83 MiB dict in 6 MiB of arrays, same answers
                _jieba = segmenter
    return _jieba


def _stemmer() -> Stemmer.Stemmer:
    # PyStemmer objects must not be shared between threads: one per thread.
    stemmer = getattr(_stemmers, "english", None)
    if stemmer is None:
        import Stemmer

        stemmer = Stemmer.Stemmer("english")
        _stemmers.english = stemmer
    return stemmer


def _word_token(word: str) -> str | None:
    """Normalize one non-Han word; None when it carries no search value."""
    if word in ENGLISH_STOPWORDS:
        return None
    if word.endswith("'s"):
        word = word[:-2]
    word = word.replace("'", "")
    if len(word) == 1 and word.isascii() and not word.isdigit():
        return None
    if word in ENGLISH_STOPWORDS:
        return None
    return word or None


def _han_tokens(run: str, mode: CjkMode) -> list[str]:
    segmenter = _segmenter()
    words = segmenter.lcut_for_search(run) if mode == "search" else segmenter.lcut(run)
    return [w for w in words if w.strip() and w not in CHINESE_STOPWORDS]


def tokenize(text: str, *, stem: bool = True, cjk_mode: CjkMode = DEFAULT_CJK_MODE) -> list[str]:
    """Split `text` into BM25 tokens, in order, repeats kept (term frequency matters).

    - Text is NFKC-normalized (full-width letters and digits become ASCII) and lowercased.
    - Han runs are segmented by jieba (`cjk_mode="exact"`, the default: one segmentation;
      `"search"`: also the words inside long ones); Chinese stopwords are dropped.
    - Other runs of letters and digits become words; English stopwords and single Latin letters
      are dropped, a trailing possessive 's is removed, and with `stem` the Snowball English
      stemmer reduces each word (walking, walked → walk).

    Thread-safe. The first call loads jieba's dictionary (about a second).
    """
    normalized = unicodedata.normalize("NFKC", text).translate(_APOSTROPHES).lower()
    tokens: list[str] = []
    words: list[str] = []
    for match in _RUNS.finditer(normalized):
        han = match.group("han")
        if han is not None:
            if words:
                tokens.extend(_finish_words(words, stem))
                words = []
            tokens.extend(_han_tokens(han, cjk_mode))
        else:
            word = _word_token(match.group("word"))
            if word is not None:
                words.append(word)
    if words:
        tokens.extend(_finish_words(words, stem))
    return tokens


def _finish_words(words: list[str], stem: bool) -> list[str]:
    if not stem:
        return words
    return list(_stemmer().stemWords(words))

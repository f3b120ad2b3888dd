"""Issue 33: zero false refusals on prose that mentions passwords, PINs and tokens without
holding one (`data/lookalike_prose.txt`, several languages, the short and indirect forms)."""

from __future__ import annotations

from pathlib import Path

from memvault.screening import Screen

LOOKALIKES = Path(__file__).parent / "data" / "lookalike_prose.txt"


def lookalike_sentences() -> list[str]:
    """The set's sentences (comment lines dropped)."""
    lines = LOOKALIKES.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.strip() and not line.startswith("#")]


def test_the_set_is_large_and_multilingual() -> None:
    sentences = lookalike_sentences()
    assert len(sentences) >= 150
    assert sum(not s.isascii() for s in sentences) >= 40


def test_no_lookalike_sentence_is_refused(screen: Screen) -> None:
    refused = [
        (i, screen.check(s).detector)
        for i, s in enumerate(lookalike_sentences())
        if not screen.check(s).accepted
    ]
    assert refused == []  # (line index, detector): never the sentence

"""The screen normalises before it scans: NFKC, invisible characters out, split keywords joined."""

from __future__ import annotations

import pytest

from memvault.screening import Screen, Verdict, normalise
from tests.test_screening.conftest import fake

GITHUB = fake("ghp_", 36)


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(ch) + 0xFEE0) if 0x21 <= ord(ch) <= 0x7E else ch for ch in text)


@pytest.mark.parametrize(
    ("raw", "stored"),
    [
        (_fullwidth("ghp_abc"), "ghp_abc"),
        ("pass\u00adword", "password"),
        ("g\u200bh\u200cp\u200d_\u2060x\ufeffy", "ghp_xy"),
        ("left\u202eright\u2066x\u2069", "leftrightx"),
        ("caf\u0065\u0301 ﬁne ①", "café fine 1"),
        ("x\U000e0069\U000e0067\U000e006e\U000e006f\U000e0072\U000e0065y", "xy"),  # tag smuggling
    ],
)
def test_normalise_folds_and_drops_invisibles(raw: str, stored: str) -> None:
    assert normalise(raw).text == stored


@pytest.mark.parametrize(
    "text",
    [
        "我今天去公园散步，天气很好！（真的）",  # full-width punctuation stays as written
        "好吧……\u3000我知道了",  # ellipsis and ideographic space too
        "👩\u200d💻 codes, ❤\ufe0f, 1\ufe0f\u20e3, 🏴\U000e0067\U000e0062\U000e0073\U000e0063"
        "\U000e0074\U000e007f",  # emoji sequences keep their joiners and selectors
        "می\u200cخواهم",  # Persian keeps its zero-width non-joiner
        "plain ASCII text stays exactly as it is",
    ],
)
def test_normalise_keeps_writing_intact(text: str) -> None:
    assert normalise(text).text == text


def test_normalise_scan_reads_kept_punctuation_as_ascii() -> None:
    result = normalise("密码：\u3000好，是（对）")
    assert result.text == "密码：\u3000好，是（对）"
    assert result.scan == "密码: 好,是(对)"


def test_normalise_folds_punctuation_between_ascii() -> None:
    assert normalise("room ４２，second＿floor，二楼").text == "room 42,second_floor，二楼"


@pytest.mark.parametrize(
    "text",
    [
        _fullwidth("ghp_abc") + "，ok\u200b…",
        "ㄱㅏ and ｶﾞ and e\u0301 and Ω",
        "x\u00ady\ufe0fz👩\u200d\u200d💻",
    ],
)
def test_normalise_is_a_fixed_point(text: str) -> None:
    once = normalise(text)
    twice = normalise(once.text)
    assert twice.text == once.text
    assert twice.scan == once.scan
    assert len(once.text) == len(once.scan)


def test_normalise_input_span_maps_back() -> None:
    raw = "tok: " + _fullwidth("ghp_") + "a\u200bb"
    result = normalise(raw)
    start = result.text.index("ghp_")
    assert result.input_span(start, len(result.text)) == (5, len(raw))


# -- the screen reads the normalised text -------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        f"the CI token is {_fullwidth(GITHUB)} keep it",
        f"the CI token is {GITHUB[:2]}\u200b{GITHUB[2:9]}\u2060{GITHUB[9:]}\ufeff keep it",
        f"the CI token is {GITHUB[:6]}\u00ad{GITHUB[6:]} keep it",
        f"the CI token is {'‌'.join(GITHUB)} keep it",
    ],
)
def test_check_hidden_github_token_refused(screen: Screen, text: str) -> None:
    result = screen.check(text)
    assert result.refusal_code == "credential_refused"
    assert result.detector == "github_token"
    finding = next(f for f in result.findings if f.detector == "github_token")
    assert normalise(text[finding.start : finding.end]).text == GITHUB


@pytest.mark.parametrize(
    "text",
    [
        "pass\u00adword: hunter2xyz",
        "pass word is hunter2",
        "pass-word: hunter2xyz",
        "PASS_WORD = hunter2xyz",
        "p a s s w o r d: hunter2xyz",
        "my p-a-s-s-w-o-r-d is Blue42Sky",
        "the wifi pass phrase is 'correct horse battery'",
        "Pass Code is 4512",
        "s.e.c.r.e.t = hunter2xyz",
        _fullwidth("password: hunter2xyz"),
        "das Kenn-Wort lautet Sonnenschein7",
    ],
)
def test_check_split_or_hidden_password_keyword_refused(screen: Screen, text: str) -> None:
    result = screen.check(text)
    assert result.refusal_code == "credential_refused", text
    assert result.findings[0].family == "password"


SPLIT_KEYWORD_PROSE = [
    "we need to pass code review before Friday",
    "I'll pass word along to the team after lunch",
    "the pass word was on everyone's lips after the match",
    "A secret to good bread is patience, the baker said",
    "p a s s the salt please, said my grandmother",
]
"""Prose in which a split keyword is only words: accepted."""


@pytest.mark.parametrize("text", SPLIT_KEYWORD_PROSE)
def test_check_split_keyword_prose_accepted(screen: Screen, text: str) -> None:
    result = screen.check(text)
    assert result.verdict is Verdict.ACCEPT, result.detector


def test_check_accepted_text_is_normalised(screen: Screen) -> None:
    raw = "Ｍｅｅｔｉｎｇ\u200b moved to room ４２，second floor"
    result = screen.check(raw)
    assert result.verdict is Verdict.ACCEPT
    assert result.text == "Meeting moved to room 42,second floor"


def test_check_invisible_padding_does_not_pass_length_rule(screen: Screen) -> None:
    result = screen.check("ok" + "\u200b" * 20)
    assert result.refusal_code == "too_short"

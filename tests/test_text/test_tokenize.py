"""`tokenize`: Chinese, English and mixed text become short, normalized search tokens."""

from __future__ import annotations

import subprocess
import sys

from memvault.text import tokenize
from tests._helpers import run_threads


def test_tokenize_chinese_sentence_gives_several_short_tokens() -> None:
    sentence = "我女儿上个月开始在社区中心学习小提琴和钢琴。"
    tokens = tokenize(sentence)
    assert len(tokens) >= 5
    assert all(len(token) <= 4 for token in tokens)
    assert {"女儿", "小提琴", "钢琴"} <= set(tokens)


def test_tokenize_chinese_stopwords_and_punctuation_dropped() -> None:
    tokens = tokenize("我的猫了，今天很开心。……“好”！")
    for dropped in ["的", "了", "我", "很", "。", "，", "…", "“", "”", "！"]:
        assert dropped not in tokens
    assert "猫" in tokens
    assert "开心" in tokens


def test_tokenize_only_stopwords_and_punctuation_gives_nothing() -> None:
    assert tokenize("的了。，…") == []
    assert tokenize("the of and, to!!") == []
    assert tokenize("") == []


def test_tokenize_english_lowercases_drops_stopwords_and_stems() -> None:
    tokens = tokenize("The Dogs were RUNNING to their owners, aren't they?")
    assert tokens == ["dog", "run", "owner"]


def test_tokenize_stem_false_keeps_surface_forms() -> None:
    assert tokenize("The Dogs were RUNNING", stem=False) == ["dogs", "running"]


def test_tokenize_stemming_conflates_inflections() -> None:
    assert tokenize("walking") == tokenize("walked") == tokenize("walks") == ["walk"]


def test_tokenize_possessive_and_curly_apostrophe_normalized() -> None:
    assert tokenize("Alice’s bicycle", stem=False) == ["alice", "bicycle"]
    assert tokenize("Alice's bicycle", stem=False) == ["alice", "bicycle"]


def test_tokenize_mixed_text_splits_scripts_in_order() -> None:
    tokens = tokenize("我喜欢用Python编程, especially testing机器学习")
    assert tokens == ["喜欢", "用", "python", "编程", "especi", "test", "机器", "学习"]


def test_tokenize_fullwidth_letters_and_digits_become_ascii() -> None:
    assert tokenize("ＡＢＣ 2026年１２月") == ["abc", "2026", "年", "12", "月"]


def test_tokenize_keeps_term_repetitions() -> None:
    assert tokenize("coffee coffee tea 咖啡 咖啡") == ["coffe", "coffe", "tea", "咖啡", "咖啡"]


def test_tokenize_single_latin_letters_dropped_digits_kept() -> None:
    assert tokenize("e-mail x 7 b2", stem=False) == ["mail", "7", "b2"]


def test_tokenize_search_mode_adds_inner_words() -> None:
    exact = tokenize("中华人民共和国", cjk_mode="exact")
    search = tokenize("中华人民共和国", cjk_mode="search")
    assert exact == ["中华人民共和国"]
    assert {"中华", "人民", "共和国", "中华人民共和国"} <= set(search)


def test_tokenize_same_text_same_tokens_across_threads() -> None:
    texts = ["我女儿上个月开始学小提琴。", "Bob's running shoes were expensive", "混合 mixed 文本"]
    expected = [tokenize(t) for t in texts]

    def work(_: int) -> None:
        for _ in range(50):
            assert [tokenize(t) for t in texts] == expected

    assert not run_threads(work, 4)


def test_tokenize_first_use_prints_nothing() -> None:
    code = "from memvault.text import tokenize; tokenize('我女儿上个月开始学小提琴。')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == ""
    assert done.stderr == ""

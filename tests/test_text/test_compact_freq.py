"""jieba with its dictionary compacted (`CompactFreq`) segments exactly as stock jieba does."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import jieba
import pytest

from memvault.text import tokenizer
from memvault.text._compact_freq import CompactFreq, compact

CMRC = Path(__file__).resolve().parents[3] / "shared" / "data" / "cmrc2018" / "cmrc2018_dev.json"
SAMPLES = [
    "我们在北京大学学习自然语言处理",
    "小明硕士毕业于中国科学院计算所，后在日本京都大学深造",
    "他来到了网易杭研大厦",
    "上个月三天前我在2022年5月买了一台笔记本电脑，价格是4999元。",
    "Alice 在 Riverstone 住，电话 555-0100；BP 和 IP 以及 QQ 号",
    "工信处女干事每月经过下属科室都要亲口交代24口交换机等技术性器件的安装工作",
]


@pytest.fixture(scope="module")
def stock() -> jieba.Tokenizer:
    jieba.setLogLevel(logging.WARNING)
    segmenter = jieba.Tokenizer()
    segmenter.initialize()
    return segmenter


def texts() -> list[str]:
    out = list(SAMPLES)
    if CMRC.exists():  # ../shared/data: real paragraphs and questions, 300 of each
        data = json.loads(CMRC.read_text(encoding="utf-8"))["data"]
        for article in data[:300]:
            for para in article["paragraphs"]:
                out.append(para["context"])
                out.extend(qa["question"] for qa in para["qas"][:1])
    return out


def test_compact_answers_as_the_dict_does(stock: jieba.Tokenizer) -> None:
    table = CompactFreq.build(stock.FREQ)
    assert table is not None
    assert len(table) == len(stock.FREQ)
    # "BP" and "偂" have the same bytes in memory (1 byte per char vs UCS-2 0x5042), so
    # Python's str hash gives them the same value: the table must still tell them apart.
    for word in ["BP", "偂", "IP", "偉", "北京大学", "北京大", "北", "自然语言处理"]:
        assert (word in table) == (word in stock.FREQ), word
        assert table.get(word) == stock.FREQ.get(word), word
    for word in ["不是一个词啊", "", "xyz", "北京大学学"]:
        assert word not in table
        assert table.get(word, -1) == -1
        with pytest.raises(KeyError):
            table[word]
    assert 42 not in table  # jieba only ever asks for strings


def test_compacted_jieba_segments_like_stock_jieba(stock: jieba.Tokenizer) -> None:
    segmenter = jieba.Tokenizer()
    segmenter.initialize()
    assert compact(segmenter)
    assert isinstance(segmenter.FREQ, CompactFreq)
    corpus = texts()
    assert len(corpus) >= len(SAMPLES)
    for text in corpus:
        assert segmenter.lcut(text) == stock.lcut(text)
        assert segmenter.lcut_for_search(text) == stock.lcut_for_search(text)


def test_memvault_tokenizer_uses_the_compact_dictionary() -> None:
    tokenizer.tokenize("北京大学")  # loads the segmenter
    assert isinstance(tokenizer._segmenter().FREQ, CompactFreq)

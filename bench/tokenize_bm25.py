"""BM25 quality of `tokenize` on public data: jieba modes on CMRC2018, stemming on LoCoMo.

Two tasks from the CMRC2018 dev set: (1) paragraphs as documents, each question should retrieve
its own paragraph; (2) sentences as documents (split at 。！？; closer to short memory notes),
each question should retrieve the sentence that holds its first answer.
Scores are BM25 exactly as the store computes it: `bm25_weights` on the document side, 1.0 per
distinct query token, and Qdrant's IDF `ln(1 + (N − n + 0.5)/(n + 0.5))`.

LoCoMo (English): each conversation is one index of `speaker: text` turns; each QA item's
evidence turns are relevant; recall@5/@10 and MRR, with and without the Snowball stemmer.

Run: `.venv/bin/python bench/tokenize_bm25.py` (needs ../shared/data).
"""

from __future__ import annotations

import bisect
import json
import math
import re
import sys
import time
from collections import Counter
from pathlib import Path

from memvault.text import bm25_weights, tokenize
from memvault.text.tokenizer import CjkMode

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
DATA = SHARED / "cmrc2018" / "cmrc2018_dev.json"
LOCOMO = SHARED / "locomo" / "locomo10.json"
EVIDENCE = re.compile(r"D:?(\d+):0*(\d+)")


MODES: list[tuple[CjkMode, CjkMode]] = [
    ("exact", "exact"),
    ("search", "search"),
    ("search", "exact"),
    ("exact", "search"),
]
Corpus = tuple[list[str], list[tuple[str, int]]]


def load() -> tuple[Corpus, Corpus]:
    raw = json.loads(DATA.read_text(encoding="utf-8"))
    paragraphs: list[str] = []
    paragraph_questions: list[tuple[str, int]] = []
    sentences: list[str] = []
    sentence_questions: list[tuple[str, int]] = []
    for article in raw["data"]:
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            paragraphs.append(context)
            starts = [0]
            starts.extend(m.end() for m in re.finditer(r"[。！？]", context))
            first_sentence = len(sentences)
            ends = [*starts[1:], len(context)]
            sentences.extend(context[a:b] for a, b in zip(starts, ends, strict=True))
            for qa in paragraph["qas"]:
                paragraph_questions.append((qa["question"], len(paragraphs) - 1))
                answer_start = qa["answers"][0]["answer_start"]
                inside = bisect.bisect_right(starts, answer_start) - 1
                sentence_questions.append((qa["question"], first_sentence + inside))
    return (paragraphs, paragraph_questions), (sentences, sentence_questions)


class Bm25Index:
    """BM25 as the store scores it: TF weights per doc, 1.0 per query term, Qdrant's IDF."""

    def __init__(self, docs: list[list[str]]) -> None:
        avgdl = sum(map(len, docs)) / len(docs)
        df = Counter(term for doc in docs for term in set(doc))
        n = len(docs)
        self.idf = {term: math.log(1 + (n - f + 0.5) / (f + 0.5)) for term, f in df.items()}
        self.postings: dict[str, list[tuple[int, float]]] = {}
        for doc_id, doc in enumerate(docs):
            for term, value in bm25_weights(doc, avgdl).items():
                self.postings.setdefault(term, []).append((doc_id, value))

    def search(self, query: list[str], limit: int) -> list[int]:
        scores: Counter[int] = Counter()
        for term in set(query):
            for doc_id, value in self.postings.get(term, ()):
                scores[doc_id] += self.idf[term] * value
        return [doc_id for doc_id, _ in scores.most_common(limit)]


def evaluate_locomo(stem: bool) -> None:
    recall5 = recall10 = mrr = 0.0
    items = 0
    for conversation in json.loads(LOCOMO.read_text(encoding="utf-8")):
        sessions = conversation["conversation"]
        turns = [
            turn for key in sessions if re.fullmatch(r"session_\d+", key) for turn in sessions[key]
        ]
        ids = [turn["dia_id"] for turn in turns]
        index = Bm25Index([tokenize(f"{t['speaker']}: {t['text']}", stem=stem) for t in turns])
        known = set(ids)
        for qa in conversation["qa"]:
            evidence = {
                f"D{a}:{b}" for a, b in EVIDENCE.findall(" ".join(map(str, qa.get("evidence", []))))
            } & known
            if not evidence:
                continue
            ranked = [ids[i] for i in index.search(tokenize(qa["question"], stem=stem), 100)]
            items += 1
            recall5 += len(evidence & set(ranked[:5])) / len(evidence)
            recall10 += len(evidence & set(ranked[:10])) / len(evidence)
            first = next((r for r, doc in enumerate(ranked, 1) if doc in evidence), None)
            mrr += 1 / first if first else 0.0
    print(
        f"locomo    stem={stem!s:5s} items={items}  R@5={recall5 / items:.3f}  "
        f"R@10={recall10 / items:.3f}  MRR@100={mrr / items:.3f}"
    )


def evaluate(
    task: str,
    doc_mode: CjkMode,
    query_mode: CjkMode,
    contexts: list[str],
    questions: list[tuple[str, int]],
) -> None:
    started = time.perf_counter()
    docs = [tokenize(text, cjk_mode=doc_mode) for text in contexts]
    tokenize_s = time.perf_counter() - started
    index = Bm25Index(docs)
    hits1 = hits5 = 0
    mrr = 0.0
    for question, gold in questions:
        ranked = index.search(tokenize(question, cjk_mode=query_mode), 100)
        if gold in ranked:
            rank = ranked.index(gold) + 1
            mrr += 1 / rank
            hits1 += rank == 1
            hits5 += rank <= 5
    q = len(questions)
    n = len(docs)
    mean_tokens = sum(map(len, docs)) / n
    print(
        f"{task:9s} docs:{doc_mode:6s} queries:{query_mode:6s} n={n} questions={q}  "
        f"hit@1={hits1 / q:.3f}  hit@5={hits5 / q:.3f}  "
        f"MRR@100={mrr / q:.3f}  tokens/doc={mean_tokens:.0f}  tokenize={tokenize_s:.1f}s"
    )


def main() -> int:
    if not DATA.is_file():
        print(f"skipped: {DATA} not found", file=sys.stderr)
        return 0
    paragraphs, sentences = load()
    tokenize("预热")  # load jieba's dictionary outside the timings
    for task, (docs, questions) in (("paragraph", paragraphs), ("sentence", sentences)):
        for doc_mode, query_mode in MODES:
            evaluate(task, doc_mode, query_mode, docs, questions)
    if LOCOMO.is_file():
        for stem in (False, True):
            evaluate_locomo(stem)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

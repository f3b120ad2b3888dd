"""Do the ONNX (int8) and numpy builds of USE-m3 give the same vectors, and how fast is each?

Embeds LoCoMo turns and CMRC questions and paragraphs with both builds and prints, per data set,
the min / p1 / mean cosine between the two vectors of each text and the share of texts at or
above the adoption gate (0.999). Then times both builds, interleaved round by round: one sentence
per call (ms/sentence) and batches of 32 (sentences/s). One thread each, as served.

Run: .venv/bin/python -m bench.embed_match [--limit 2000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Sequence

import numpy as np

from bench._retrieval_data import load_cmrc, load_locomo
from memvault.embed.base import Embedder
from memvault.embed.use import UseEmbedder
from memvault.embed.use_onnx import UseOnnxEmbedder

GATE = 0.999


def texts(limit: int, seed: int = 0) -> dict[str, list[str]]:
    """Up to `limit` texts per set, sampled with a fixed seed."""
    rng = random.Random(seed)
    locomo = [t.memory_text(captions=False) for c in load_locomo() for t in c.turns]
    cmrc = load_cmrc()
    sets = {
        "locomo-turns": locomo,
        "cmrc-questions": [q for p in cmrc for q in p.questions],
        "cmrc-paragraphs": [p.context for p in cmrc],
    }
    return {name: rng.sample(items, min(limit, len(items))) for name, items in sets.items()}


def cosines(a: Embedder, b: Embedder, items: Sequence[str], batch: int = 64) -> np.ndarray:
    """Row-wise cosine of the two builds' unit vectors."""
    out = []
    for i in range(0, len(items), batch):
        chunk = items[i : i + batch]
        out.append((a.embed_documents(chunk) * b.embed_documents(chunk)).sum(axis=1))
    return np.concatenate(out)


def timing(embedder: Embedder, items: Sequence[str]) -> tuple[float, float]:
    """(ms per sentence one at a time, sentences/s in batches of 32)."""
    single = items[:100]
    start = time.perf_counter()
    for text in single:
        embedder.embed_documents([text])
    per_sentence = (time.perf_counter() - start) * 1000 / len(single)
    start = time.perf_counter()
    for i in range(0, len(items), 32):
        embedder.embed_documents(items[i : i + 32])
    return per_sentence, len(items) / (time.perf_counter() - start)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--limit", type=int, default=2000, help="texts per data set")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved timing rounds")
    args = parser.parse_args(argv)
    numpy_build, onnx_build = UseEmbedder(threads=1), UseOnnxEmbedder(threads=1)
    numpy_build.load()
    onnx_build.load()
    sets = texts(args.limit)
    print(f"cosine(onnx, numpy), gate {GATE}")
    everything = []
    for name, items in sets.items():
        cos = cosines(onnx_build, numpy_build, items)
        everything.append(cos)
        print(
            f"  {name:16s} n={len(cos):5d}  min {cos.min():.4f}  p1 {np.percentile(cos, 1):.4f}  "
            f"mean {cos.mean():.4f}  >= gate {np.mean(cos >= GATE):6.1%}"
        )
    cos = np.concatenate(everything)
    verdict = "match" if cos.min() >= GATE else "NO match"
    print(f"  all n={len(cos):5d}  min {cos.min():.4f}  mean {cos.mean():.4f}:", verdict)
    sample = sets["locomo-turns"][:500] + sets["cmrc-questions"][:500]
    speeds: dict[str, list[tuple[float, float]]] = {"numpy": [], "onnx": []}
    for _ in range(args.rounds):
        speeds["numpy"].append(timing(numpy_build, sample))
        speeds["onnx"].append(timing(onnx_build, sample))
    print(f"speed, 1 thread, median of {args.rounds} interleaved rounds on {len(sample)} texts")
    for name, runs in speeds.items():
        ms = statistics.median(r[0] for r in runs)
        rate = statistics.median(r[1] for r in runs)
        print(f"  {name:6s} {ms:6.2f} ms/sentence (one a call)  {rate:6.0f} sentences/s (batch 32)")


if __name__ == "__main__":
    main()

"""What USE's tokenizer costs an embedding: the package's pure-Python port vs `FastUseTokenizer`.

`.venv/bin/python -m bench.use_tokenizer [--texts 1000] [--rounds 3] [--threads 1]`

Embeds the shared peer workload's memory texts one at a time (as the add path does for a lone
writer) with the same loaded model, alternating the two tokenizers round by round, and prints
the mean ms per text of each and how many texts went to the port for an `<unk>` piece.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from bench.peers import workload_queries
from memvault.embed import UseEmbedder
from memvault.embed.use_tokenizer import FastUseTokenizer, set_tokenizer


def texts(count: int) -> list[str]:
    """The memory texts the workload's queries target (10 % Chinese), `count` of them."""
    return [q.target_text for q in workload_queries(10, 1000, queries=max(count // 10, 1))][:count]


def per_text_ms(model: Any, items: list[str]) -> float:
    start = time.perf_counter()
    for text in items:
        model.encode([text])
    return (time.perf_counter() - start) / len(items) * 1e3


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    items = texts(args.texts)
    embedder = UseEmbedder(threads=args.threads)
    embedder.load()
    model = embedder._model.get()
    fast = model._sp
    if not isinstance(fast, FastUseTokenizer):
        raise SystemExit("the sentencepiece package is missing: nothing to compare")
    port = fast.port
    to_port = sum(fast.native_ids(t) is None for t in items)
    print(f"{len(items)} texts, {to_port} of them tokenized by the port (<unk> pieces)")
    for r in range(1, args.rounds + 1):
        timed = {}
        for name, tokenizer in (("port", port), ("fast", fast)):
            set_tokenizer(model, tokenizer)
            timed[name] = per_text_ms(model, items)
        set_tokenizer(model, fast)
        saved = timed["port"] - timed["fast"]
        print(
            f"round {r}: port {timed['port']:.3f} ms/text, fast {timed['fast']:.3f} ms/text, "
            f"saved {saved:.3f} ms"
        )


if __name__ == "__main__":
    main()

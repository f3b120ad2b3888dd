"""The cost of BM25 IDF over the reader's readable set (issue 32), as a ratio in one run.

One user of one tenant holds LoCoMo turns written by two agents: `reader` (conversations
0..R-1) and `other` (the rest, private). Each of `reader`'s questions is searched in each mode
twice, alternately with the readable-set IDF (the service) and without it (the query's terms
weighed 1, the cost of the search before issue 32 minus the store's IDF modifier, which is
free), so both variants meet the same machine load. Prints p50/p95 per variant and the ratio.

Run: nice .venv/bin/python -m bench.readable_idf --reader-convs 3
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from bench._harness import arg_parser, percentile
from bench._retrieval_data import load_locomo
from bench.locomo import TENANT, MemoEmbedder, add_in_batches, fresh_services, turn_drafts
from memvault.embed import make_embedder
from memvault.scope import Scope
from memvault.vault import retrieve


def main() -> int:
    parser = arg_parser(__doc__)
    parser.add_argument("--embedder", default="use-m3")
    parser.add_argument("--reader-convs", type=int, default=3)
    parser.add_argument("--modes", default="sparse,hybrid,full")
    args = parser.parse_args()
    convs = load_locomo()
    weigh = retrieve.weigh_by_readable_idf
    with tempfile.TemporaryDirectory(prefix="readable-idf-models-") as models:
        embedder = MemoEmbedder(make_embedder(args.embedder, data_dir=Path(models)))
        with fresh_services(embedder, "readable-idf-") as services:
            reader = services.vault.scoped(Scope(TENANT, "alice", "reader"))
            other = services.vault.scoped(Scope(TENANT, "alice", "other"))
            mine = convs[: args.reader_convs]
            for conv in mine:
                add_in_batches(reader, turn_drafts(conv, captions=False, sessions=True))
            n_other = 0
            for conv in convs[args.reader_convs :]:
                n_other += len(
                    add_in_batches(other, turn_drafts(conv, captions=False, sessions=True))
                )
            questions = [q.text for conv in mine for q in conv.questions]
            print(f"reader notes: {reader.list_notes()[1]}, other agent's notes: {n_other}")
            for mode in args.modes.split(","):
                times: dict[str, list[float]] = {"readable IDF": [], "no IDF": []}
                for q in questions:
                    for variant in ("readable IDF", "no IDF", "no IDF", "readable IDF"):
                        retrieve.weigh_by_readable_idf = (  # type: ignore[attr-defined]
                            weigh if variant == "readable IDF" else (lambda i, n, w, s: s)
                        )
                        started = time.perf_counter()
                        reader.search(q, limit=10, mode=mode)
                        times[variant].append((time.perf_counter() - started) * 1000)
                retrieve.weigh_by_readable_idf = weigh  # type: ignore[attr-defined]
                on, off = times["readable IDF"], times["no IDF"]
                print(
                    f"{mode:7s} readable IDF p50 {percentile(on, 50):.2f} ms "
                    f"p95 {percentile(on, 95):.2f}; no IDF p50 {percentile(off, 50):.2f} ms "
                    f"p95 {percentile(off, 95):.2f}; p50 ratio "
                    f"{percentile(on, 50) / percentile(off, 50):.3f}"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

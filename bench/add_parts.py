"""Where a single add spends its time, part by part, in a store `bench.peers` filled.

Opens the data directory `bench.peers` left behind (it keeps it unless `--cleanup`), with the
shared harness's USE-m3 object, and adds `--adds` new memories of the shared workload (another
seed, so none is a twin of a stored one) one at a time, round-robin over the stored scopes, as
`bench.peers` does. Each part of the add path is timed by wrapping the function that does it
(two `perf_counter` calls each), and the report gives milliseconds per add:

- `prepare`: validation, the write screen (`screen_note`), sealing, tokenizing, the row;
- `embed`: the model call; `build_points`: sparse vectors and payloads; `index_upsert`: Edge;
- `commit_sql`: the one transaction (insert unless a live twin exists, corpus counts);
- `other`: the rest (the group commit's bookkeeping, timing metrics, the call itself).

Run: .venv/bin/python -m bench.add_parts --data-dir /tmp/memvault-peers/memvault-T10-N5000
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import peers
from bench._harness import arg_parser, open_vault
from memvault.scope import Scope

TIMES: defaultdict[str, float] = defaultdict(float)


def timed(owner: Any, name: str, label: str) -> None:
    """Replace `owner.name` by a wrapper that adds its time to `TIMES[label]`."""
    inner: Callable[..., Any] = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            TIMES[label] += time.perf_counter() - start

    setattr(owner, name, wrapper)


def open_peer_store(data_dir: Path, threads: int) -> Any:
    """The services on a data directory `bench.peers` left, with the shared harness's USE-m3
    object (warmed up), as `bench.peers` opened them."""
    embedder = peers.PeerEmbedder(peers.shared("embedders").load("use-m3", threads=threads))
    embedder.enc.encode(["warm up the embedder"])
    return open_vault(data_dir / "vault", embedder, screen=True)


def peer_store_parser(doc: str | None, *, rounds: int) -> argparse.ArgumentParser:
    """The options of a tool that reopens a store `bench.peers` filled: `--data-dir`, the run's
    shape (`-T`, `-N`, `-Q`, from which the workload's queries are rebuilt) and `--rounds`."""
    parser = arg_parser(doc)
    parser.add_argument("--data-dir", type=Path, required=True, help="a bench.peers data dir")
    parser.add_argument("--tenants", "-T", type=int, default=10, help="as the peers run")
    parser.add_argument("--memories", "-N", type=int, required=True, help="as the peers run")
    parser.add_argument("--queries", "-Q", type=int, default=50, help="as the peers run")
    parser.add_argument("--rounds", type=int, default=rounds)
    return parser


def add_fill_options(parser: argparse.ArgumentParser) -> None:
    """`--threads` (the harness embedder's, as `bench.peers`) and `--fill` (measure in the
    process that fills the store)."""
    parser.add_argument("--threads", type=int, default=2, help="embedder threads (as peers)")
    parser.add_argument(
        "--fill", action="store_true", help="run bench.peers in process first (wipes --data-dir)"
    )


def fill_args(a: argparse.Namespace) -> list[str]:
    """`bench.peers`' arguments for filling `a.data_dir` afresh in this process, with the shape
    and embedder threads of `peer_store_parser` and `add_fill_options`."""
    return [
        *("-T", str(a.tenants), "-N", str(a.memories), "-Q", str(a.queries)),
        *("--threads", str(a.threads), "--data-dir", str(a.data_dir), "--no-reopen"),
    ]


def print_parts(n: int, total: float, unit: str) -> None:
    """Each part's milliseconds per operation (`TIMES`), then what the top-level parts leave of
    `total` seconds as `other` (indented labels are parts of the part above them)."""
    for label, seconds in TIMES.items():
        print(f"  {label:16s} {1000 * seconds / n:.3f} ms/{unit}")
    known = sum(s for label, s in TIMES.items() if not label.startswith(" "))
    print(f"  {'other':16s} {1000 * (total - known) / n:.3f} ms/{unit}")


def instrument(index: Any) -> None:
    import memvault.vault.group_commit as group_commit
    import memvault.vault.screen_gate as screen_gate
    import memvault.vault.writes as writes

    timed(writes.NoteWriter, "prepare", "prepare")
    timed(screen_gate.ScreenGate, "screen_note", "  screen_note")
    timed(group_commit, "embed_items", "embed")
    timed(group_commit, "build_points", "build_points")
    timed(group_commit, "_commit", "commit_sql")
    timed(index, "upsert", "index_upsert")


def main(argv: list[str] | None = None) -> int:
    parser = arg_parser(__doc__)
    parser.add_argument("--data-dir", type=Path, required=True, help="a bench.peers data dir")
    parser.add_argument("--tenants", "-T", type=int, default=10, help="as the peers run")
    parser.add_argument("--adds", type=int, default=2000)
    parser.add_argument(
        "--seed", type=int, default=7, help="workload seed of the new memories (new per run)"
    )
    parser.add_argument("--threads", type=int, default=2, help="embedder threads (as peers)")
    a = parser.parse_args(argv)
    workload = peers.shared("workload")
    services = open_peer_store(a.data_dir, a.threads)
    instrument(services.vault.parts.index)
    spec = argparse.Namespace(
        seed=a.seed,
        tenants=a.tenants,
        users_per_tenant=1,
        memories=max(a.adds // a.tenants, 1),
        queries=1,
        zh_frac=0.10,
    )
    records = list(workload.from_args(spec).iter_memories(order="interleaved"))[: a.adds]
    views: dict[tuple[str, str], Any] = {}

    def add(record: Any, suffix: str) -> None:
        key = (record.tenant_id, record.user_id)
        if key not in views:
            views[key] = services.vault.scoped(Scope(*key, peers.AGENT))
        views[key].add(record.text + suffix)

    for record in records[:50]:  # open every shard, warm the caches
        add(record, " (warm-up)")
    TIMES.clear()
    latencies = []
    started = time.perf_counter()
    for record in records:
        start = time.perf_counter()
        add(record, "")
        latencies.append(time.perf_counter() - start)
    total = time.perf_counter() - started
    n = len(latencies)
    print(
        f"{a.data_dir.name}: {n} adds, {n / total:.1f}/s, mean {1000 * total / n:.3f} ms, "
        f"p50 {1000 * statistics.median(latencies):.3f} ms"
    )
    print_parts(n, total, "add")
    services.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

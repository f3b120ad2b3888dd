"""What a search's scope filter and payload cost the Edge engine, in a fresh process or the
writing one.

Opens the data directory `bench.peers` left behind (or, with `--fill`, fills it in this process
and measures before closing it, as `bench.search_parts --fill` does), embeds the shared
workload's queries once, then times the engine call alone (`EdgeShard.query` on the query's
partition, limit 50 as a full-mode prefetch) for each variant below, `--rounds` times, the
order reversed every other round. It prints the p50 and mean per variant:

- dense with the scope filter a search sends (`user_id`, `readers` any of the caller's agent
  and `*`, `is_active`), with and without the payload, and with the payload after a query
  embedding (the model's pass evicts the CPU caches, as in a real search);
- dense with parts of that filter: none, `is_active` only, `user_id` and `is_active`,
  `readers` and `is_active`, and the readers as `should` conditions instead of `any`;
- sparse (BM25) with the scope filter, with and without the payload.

Run: .venv/bin/python -m bench.edge_filters -N 5000
     --data-dir /tmp/memvault-peers/memvault-T10-N5000 [--fill] [--rounds 2]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from qdrant_edge import FieldCondition, Filter, MatchAny, MatchValue, Query, QueryRequest

from bench import peers
from bench.add_parts import add_fill_options, fill_args, open_peer_store, peer_store_parser
from memvault.index._edge_convert import edge_filter, edge_sparse
from memvault.index._edge_layout import partition_folder_name
from memvault.index.base import DENSE, SPARSE, PointFilter
from memvault.scope import Scope
from memvault.text.bm25 import SparseEncoder

PREFETCH = 50
"""A full-mode search's prefetch per list (`Fusion.prefetch`)."""

Case = tuple[Any, Any, PointFilter, list[float], Any]
"""(shard, view, filter, query vector, sparse query) of one workload query."""


def _cond(key: str, value: Any) -> FieldCondition:
    return FieldCondition(key=key, match=MatchValue(value))


def _active() -> FieldCondition:
    return _cond("is_active", 1)


def _readers(where: PointFilter) -> FieldCondition:
    return FieldCondition(key="readers", match=MatchAny(list(where.readers_any)))


FILTERS: dict[str, Callable[[PointFilter], Filter | None]] = {
    "scope filter": edge_filter,
    "no filter": lambda w: None,
    "is_active": lambda w: Filter(must=[_active()]),
    "user_id + is_active": lambda w: Filter(must=[_cond("user_id", w.user_id), _active()]),
    "readers + is_active": lambda w: Filter(must=[_readers(w), _active()]),
    "scope, readers as should": lambda w: Filter(
        must=[_cond("user_id", w.user_id), _active()],
        should=[_cond("readers", r) for r in w.readers_any],
    ),
}


def cases(services: Any, memories: int, tenants: int, queries: int) -> list[Case]:
    """Each workload query's partition, scope filter, vector and BM25 query (embedded once)."""
    parts = services.vault.parts
    shards = parts.index._shards
    out: list[Case] = []
    for q in peers.workload_queries(tenants, memories, queries):
        view = services.vault.scoped(Scope(q.tenant_id, q.user_id, peers.AGENT))
        where = view.point_filter(None)
        vector = [float(x) for x in parts.embedder.embed_query(view.scope, q.text).reshape(-1)]
        encoder = SparseEncoder(parts.keyring.index_key(view.scope.tenant).token_id)
        key = (view.namespace, partition_folder_name(where.user_id))
        shard = shards.run(key, lambda s: s, create=False, missing=None, action="bench")
        out.append((shard, view, where, vector, encoder.encode_query(q.text)))
    return out


def variants() -> dict[str, tuple[Callable[[Case], Any], bool]]:
    """The timed engine calls by name, each with whether a query embedding runs first."""

    def dense(name: str, payload: bool) -> Callable[[Case], Any]:
        make = FILTERS[name]

        def call(case: Case) -> Any:
            shard, _, where, vector, _ = case
            query = Query.Nearest(vector, using=DENSE)
            request = QueryRequest(
                limit=PREFETCH, query=query, filter=make(where), with_payload=payload
            )
            return shard.query(request)

        return call

    def sparse(payload: bool) -> Callable[[Case], Any]:
        def call(case: Case) -> Any:
            shard, _, where, _, bm25 = case
            if not bm25.indices:
                return []
            query = Query.Nearest(edge_sparse(bm25), using=SPARSE)
            request = QueryRequest(
                limit=PREFETCH, query=query, filter=edge_filter(where), with_payload=payload
            )
            return shard.query(request)

        return call

    table = {f"dense, {name}, no payload": (dense(name, False), False) for name in FILTERS}
    table["dense, scope filter, payload"] = (dense("scope filter", True), False)
    table["dense, no filter, payload"] = (dense("no filter", True), False)
    table["dense, scope filter, payload, after an embedding"] = (dense("scope filter", True), True)
    table["sparse, scope filter, no payload"] = (sparse(False), False)
    table["sparse, scope filter, payload"] = (sparse(True), False)
    return table


def measure(a: argparse.Namespace, services: Any, where: str) -> None:
    """Time every variant over every query, `a.rounds` times; print p50 and mean."""
    all_cases = cases(services, a.memories, a.tenants, a.queries)
    embedder = services.vault.parts.embedder
    table = variants()
    times: dict[str, list[float]] = {name: [] for name in table}
    names = list(table)
    for round_no in range(a.rounds):
        for name in names if round_no % 2 == 0 else names[::-1]:
            call, embed_first = table[name]
            for case in all_cases:
                if embed_first:  # a model pass first, untimed, as in a real search
                    embedder.embed_query(case[1].scope, "an unrelated query to embed first")
                    embedder.cache.clear()
                start = time.perf_counter()
                call(case)
                times[name].append(time.perf_counter() - start)
    print(
        f"{where}: {len(all_cases)} queries x {a.rounds} rounds, engine call only, limit {PREFETCH}"
    )
    for name in names:
        xs = times[name]
        p50, mean = 1000 * statistics.median(xs), 1000 * statistics.fmean(xs)
        print(f"  {name:50s} p50 {p50:.3f} ms  mean {mean:.3f} ms")


def main(argv: list[str] | None = None) -> int:
    parser = peer_store_parser(__doc__, rounds=2)
    add_fill_options(parser)
    a = parser.parse_args(argv)
    if not a.fill:
        services = open_peer_store(a.data_dir, a.threads)
        try:
            measure(a, services, "fresh process")
        finally:
            services.close()
        return 0
    peers.main(fill_args(a), before_close=lambda services: measure(a, services, "writing process"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

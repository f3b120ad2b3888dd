"""BM25 IDF over the notes a reader may read (issue 32: no side channel between agents).

The index applies no IDF modifier: an engine's IDF counts every note of a partition, and a
partition holds every agent of a user, so another agent's private notes moved a reader's BM25
scores (agent `planner` wrote 15 notes with "zebra office" and agent `writer`'s top score for
that query fell from 2.12 to 0.33). Here the document count and each query term's document
frequency are counted by the index under the reader's own scope filter (user, readers ∋ the
agent or `*`, live), so they cover exactly the readable set. Each point's payload lists its
keyed token ids (`terms`), which is what a term's count matches.

Cost: one count for the set and one per distinct query term, each an indexed payload count
inside the reader's partition (docs/retrieval.md, "BM25 per readable set"); Edge remembers
them until the partition changes.
"""

from __future__ import annotations

from dataclasses import replace

from memvault.index.base import PointFilter, VectorIndex
from memvault.text import SparseEncoder
from memvault.text.vectors import SparseVector


def readable_filter(where: PointFilter) -> PointFilter:
    """The scope part of a search's filter: who may read what, without the query's narrowing.

    Topics, note type and id lists narrow one query; IDF is a property of the reader's
    collection, so it is counted over everything the reader may read (never more).
    """
    return replace(where, topic_tags=(), note_type=None, exclude_ids=(), only_ids=(), term=None)


def weigh_by_readable_idf(
    index: VectorIndex, namespace: str, where: PointFilter, query: SparseVector
) -> SparseVector:
    """`query` (weight 1 per term) with each term's IDF over the reader's readable set."""
    if not query.indices:
        return query
    scope = readable_filter(where)
    n_docs = index.count(namespace, scope)
    if n_docs == 0:
        return query
    dfs = [index.count(namespace, replace(scope, term=int(t))) for t in query.indices]
    return SparseEncoder.weigh_query(query, n_docs, dfs)

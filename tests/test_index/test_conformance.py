"""The `VectorIndex` contract, run against every adapter (EdgeIndex and QdrantIndex local mode)."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

import pytest

from memvault.errors import InvalidRequest
from memvault.index import Hit, IndexPoint, PointFilter, VectorIndex
from tests._helpers import run_threads
from tests.test_index.shapes import DIM, axis, mix, new_id, point, sparse

NS = "tenant1"
ALL = PointFilter()


def ids_of(hits: list) -> list[str]:
    return [h.id for h in hits]


# -- writes and reads ---------------------------------------------------------------------------


def test_index_satisfies_protocol(index: VectorIndex) -> None:
    assert isinstance(index, VectorIndex)


def test_upsert_then_retrieve_returns_payload(index: VectorIndex) -> None:
    p = point(axis(0), words={7: 1.0}, topic_tags=["t1", "t2"], readers=["a1", "*"])
    index.upsert(NS, [p])

    [hit] = index.retrieve(NS, [p.id])

    assert hit.id == p.id
    assert hit.score == 0.0
    assert hit.payload == p.payload


def test_upsert_same_id_replaces_vector_and_payload(index: VectorIndex) -> None:
    pid = new_id()
    index.upsert(NS, [point(axis(0), pid=pid, note_type="fact")])
    index.upsert(NS, [point(axis(1), pid=pid, note_type="episode")])

    assert index.count(NS, ALL) == 1
    assert index.retrieve(NS, [pid])[0].payload["note_type"] == "episode"
    [top] = index.search_dense(NS, axis(1), ALL, 1)
    assert top.id == pid
    assert top.score == pytest.approx(1.0, abs=1e-5)


def test_retrieve_uppercase_id_returns_canonical_lowercase(index: VectorIndex) -> None:
    pid = new_id()
    index.upsert(NS, [point(axis(0), pid=pid.upper())])

    assert ids_of(index.retrieve(NS, [pid.upper()])) == [pid]
    assert index.scroll_ids(NS, ALL) == [pid]


def test_retrieve_missing_ids_are_skipped_and_order_kept(index: VectorIndex) -> None:
    a, b = point(axis(0)), point(axis(1))
    index.upsert(NS, [a, b])

    assert ids_of(index.retrieve(NS, [b.id, new_id(), a.id])) == [b.id, a.id]


def test_set_payload_merges_and_skips_unknown_ids(index: VectorIndex) -> None:
    p = point(axis(0))
    index.upsert(NS, [p])

    index.set_payload(NS, [p.id, new_id()], {"is_active": 0, "superseded_by": "x"})

    merged = index.retrieve(NS, [p.id])[0].payload
    assert merged == {**p.payload, "is_active": 0, "superseded_by": "x"}
    assert index.count(NS, ALL) == 1


def test_set_payload_bool_flag_is_stored_as_int(index: VectorIndex) -> None:
    p = point(axis(0), is_active=0)
    index.upsert(NS, [p])

    index.set_payload(NS, [p.id], {"is_active": True})

    assert index.retrieve(NS, [p.id])[0].payload["is_active"] == 1
    assert index.count(NS, PointFilter(active_only=True)) == 1


def test_upsert_bool_flag_matches_active_only(index: VectorIndex) -> None:
    index.upsert(NS, [point(axis(0), is_active=True), point(axis(1), is_active=False)])

    assert index.count(NS, PointFilter(active_only=True)) == 1


def test_delete_by_id_removes_only_those(index: VectorIndex) -> None:
    a, b, c = point(axis(0)), point(axis(1)), point(axis(2))
    index.upsert(NS, [a, b, c])

    index.delete(NS, [a.id, c.id, new_id()])

    assert index.scroll_ids(NS, ALL) == [b.id]


def test_delete_where_user_removes_that_user_only(index: VectorIndex) -> None:
    mine = [point(axis(i), user="u1") for i in range(3)]
    theirs = point(axis(3), user="u2")
    index.upsert(NS, [*mine, theirs])

    index.delete_where(NS, PointFilter(user_id="u1"))

    assert index.scroll_ids(NS, ALL) == [theirs.id]


def test_delete_where_user_and_agent_keeps_other_agents(index: VectorIndex) -> None:
    gone = point(axis(0), user="u1", agent="a1")
    kept_agent = point(axis(1), user="u1", agent="a2")
    kept_user = point(axis(2), user="u2", agent="a1")
    index.upsert(NS, [gone, kept_agent, kept_user])

    index.delete_where(NS, PointFilter(user_id="u1", agent_id="a1"))

    assert sorted(index.scroll_ids(NS, ALL)) == sorted([kept_agent.id, kept_user.id])


def test_drop_namespace_removes_everything(index: VectorIndex) -> None:
    index.upsert(NS, [point(axis(0))])
    index.upsert("tenant2", [point(axis(0))])

    index.drop_namespace(NS)
    index.drop_namespace("never-created")

    assert index.namespaces() == ["tenant2"]
    assert index.count(NS, ALL) == 0
    assert index.search_dense(NS, axis(0), ALL, 5) == []


def test_drop_namespace_then_upsert_starts_empty(index: VectorIndex) -> None:
    index.upsert(NS, [point(axis(0)), point(axis(1))])
    index.drop_namespace(NS)

    index.upsert(NS, [point(axis(2))])

    assert index.count(NS, ALL) == 1


def test_count_with_filters_counts_matches(index: VectorIndex) -> None:
    index.upsert(
        NS,
        [
            point(axis(0), user="u1", note_type="fact"),
            point(axis(1), user="u1", note_type="episode"),
            point(axis(2), user="u2", note_type="fact"),
            point(axis(3), user="u1", note_type="fact", is_active=0),
        ],
    )

    assert index.count(NS, ALL) == 4
    assert index.count(NS, PointFilter(user_id="u1")) == 3
    assert index.count(NS, PointFilter(user_id="u1", note_type="fact")) == 2
    assert index.count(NS, PointFilter(user_id="u1", note_type="fact", active_only=True)) == 1


def test_scroll_ids_returns_every_match_past_one_page(index: VectorIndex) -> None:
    points = [point(mix((i % DIM, 1.0), ((i + 1) % DIM, 0.5))) for i in range(1203)]
    index.upsert(NS, points)
    index.upsert(NS, [point(axis(0), user="u2")])

    found = index.scroll_ids(NS, PointFilter(user_id="u1"))

    assert sorted(found) == sorted(p.id for p in points)


def test_namespaces_lists_created_including_mode_b(index: VectorIndex) -> None:
    index.upsert("t1", [point(axis(0))])
    index.upsert("t1~agent-7", [point(axis(0))])

    assert index.namespaces() == ["t1", "t1~agent-7"]


# -- compaction and delete semantics ------------------------------------------------------------


def test_compact_keeps_live_points_and_deleted_ones_stay_deleted(index: VectorIndex) -> None:
    kept = [point(axis(i), user="u1", words={i: 1.0}) for i in range(3)]
    gone = [point(axis(i), user="u1") for i in range(3, 5)]
    other = point(axis(5), user="u2")
    index.upsert(NS, [*kept, *gone, other])
    index.delete(NS, [g.id for g in gone])
    before = {p.id: index.search_dense(NS, p.dense, PointFilter(user_id="u1"), 1)[0] for p in kept}

    rebuilt = index.compact(NS)

    assert isinstance(rebuilt, int) and rebuilt >= 0
    assert index.compact(NS) == 0  # nothing pending any more
    assert sorted(index.scroll_ids(NS, ALL)) == sorted([*(p.id for p in kept), other.id])
    assert index.retrieve(NS, [g.id for g in gone]) == []
    for p in kept:
        [top] = index.search_dense(NS, p.dense, PointFilter(user_id="u1"), 1)
        assert top.id == p.id
        assert top.score == pytest.approx(before[p.id].score, abs=1e-6)
        assert top.payload == p.payload
    assert ids_of(index.search_sparse(NS, sparse({1: 1.0}), PointFilter(user_id="u1"), 5)) == [
        kept[1].id
    ]


def test_compact_unknown_namespace_is_zero_and_creates_nothing(index: VectorIndex) -> None:
    assert index.compact("nobody") == 0
    assert index.compact_all() == 0
    assert index.namespaces() == []
    with pytest.raises(InvalidRequest):
        index.compact("../etc")


def test_compact_all_covers_every_namespace(index: VectorIndex) -> None:
    a, b = point(axis(0)), point(axis(1))
    index.upsert("t1", [a, point(axis(2))])
    index.upsert("t2", [b, point(axis(3))])
    index.delete("t1", [a.id])
    index.delete("t2", [b.id])

    total = index.compact_all()

    assert total >= 0
    assert index.compact_all() == 0
    assert index.count("t1", ALL) == 1 and index.count("t2", ALL) == 1


def test_deleted_user_can_write_again(index: VectorIndex) -> None:
    index.upsert(NS, [point(axis(0), user="u1"), point(axis(1), user="u2")])
    index.delete_where(NS, PointFilter(user_id="u1"))

    fresh = point(axis(2), user="u1")
    index.upsert(NS, [fresh])

    assert index.scroll_ids(NS, PointFilter(user_id="u1")) == [fresh.id]
    assert index.count(NS, ALL) == 2
    assert index.namespaces() == [NS]


def test_delete_where_empty_filter_empties_the_namespace(index: VectorIndex) -> None:
    index.upsert(NS, [point(axis(0), user="u1"), point(axis(1), user="u2")])

    index.delete_where(NS, ALL)

    assert index.count(NS, ALL) == 0
    assert index.namespaces() == [NS]
    index.upsert(NS, [point(axis(2), user="u2")])
    assert index.count(NS, ALL) == 1


def test_delete_then_upsert_same_id_brings_it_back(index: VectorIndex) -> None:
    p = point(axis(0), user="u1")
    index.upsert(NS, [p, point(axis(1), user="u1")])
    index.delete(NS, [p.id])
    index.compact(NS)

    index.upsert(NS, [p])

    [top] = index.search_dense(NS, axis(0), PointFilter(user_id="u1"), 1)
    assert top.id == p.id


def test_point_without_user_id_is_stored_and_found(index: VectorIndex) -> None:
    anonymous = IndexPoint(id=new_id(), dense=axis(0), payload={"is_active": 1})
    index.upsert(NS, [anonymous, point(axis(1), user="u1")])

    assert ids_of(index.retrieve(NS, [anonymous.id])) == [anonymous.id]
    assert index.count(NS, PointFilter(active_only=True)) == 2
    assert index.count(NS, PointFilter(user_id="u1")) == 1
    index.delete(NS, [anonymous.id])
    index.compact(NS)
    assert index.count(NS, ALL) == 1


# -- validation ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad", ["", "../etc", "a/b", "-lead", "a b", "x" * 202, "acme\n", "acme\r\n", "ACME\x00"]
)
def test_any_call_with_bad_namespace_raises_invalid_request(index: VectorIndex, bad: str) -> None:
    with pytest.raises(InvalidRequest):
        index.upsert(bad, [point(axis(0))])
    with pytest.raises(InvalidRequest):
        index.count(bad, ALL)
    with pytest.raises(InvalidRequest):
        index.drop_namespace(bad)


def test_upsert_non_uuid_id_raises_invalid_request(index: VectorIndex) -> None:
    with pytest.raises(InvalidRequest):
        index.upsert(NS, [point(axis(0), pid="note-1")])


def test_upsert_wrong_dimension_raises_invalid_request(index: VectorIndex) -> None:
    with pytest.raises(InvalidRequest):
        index.upsert(NS, [point([1.0, 0.0, 0.0])])
    with pytest.raises(InvalidRequest):
        index.search_dense(NS, [1.0, 0.0], ALL, 3)


# -- unknown namespaces -------------------------------------------------------------------------


def test_unknown_namespace_reads_are_empty_and_create_nothing(index: VectorIndex) -> None:
    q = sparse({1: 1.0})

    assert index.count("nobody", ALL) == 0
    assert index.search_dense("nobody", axis(0), ALL, 5) == []
    assert index.search_sparse("nobody", q, ALL, 5) == []
    assert index.search_hybrid("nobody", axis(0), q, ALL, 5, 10) == []
    assert index.retrieve("nobody", [new_id()]) == []
    assert index.scroll_ids("nobody", ALL) == []
    index.delete("nobody", [new_id()])
    index.delete_where("nobody", ALL)
    index.set_payload("nobody", [new_id()], {"is_active": 0})

    assert index.namespaces() == []


# -- dense search and filters -------------------------------------------------------------------


def test_search_dense_orders_by_cosine(index: VectorIndex) -> None:
    near = point(mix((0, 1.0), (1, 0.1)))
    middle = point(mix((0, 1.0), (1, 1.0)))
    far = point(mix((0, 0.2), (1, 1.0)))
    opposite = point(axis(0, -1.0))
    index.upsert(NS, [far, opposite, near, middle])

    hits = index.search_dense(NS, axis(0, 3.0), ALL, 10)

    assert ids_of(hits) == [near.id, middle.id, far.id, opposite.id]
    assert hits[0].score == pytest.approx(0.995, abs=1e-3)
    assert hits[-1].score == pytest.approx(-1.0, abs=1e-5)
    assert hits[0].payload["user_id"] == "u1"


def test_search_dense_limit_truncates(index: VectorIndex) -> None:
    index.upsert(NS, [point(mix((0, 1.0), (1, 0.1 * i))) for i in range(6)])

    assert len(index.search_dense(NS, axis(0), ALL, 3)) == 3
    assert index.search_dense(NS, axis(0), ALL, 0) == []


def test_filter_user_and_agent_exact_match(index: VectorIndex) -> None:
    target = point(axis(1), user="u1", agent="a2")
    index.upsert(
        NS, [point(axis(0), user="u1", agent="a1"), point(axis(0), user="u2", agent="a2"), target]
    )

    hits = index.search_dense(NS, axis(0), PointFilter(user_id="u1", agent_id="a2"), 10)

    assert ids_of(hits) == [target.id]


def test_filter_readers_any_matches_wildcard_and_named(index: VectorIndex) -> None:
    public = point(axis(0), readers=["*"])
    named = point(axis(1), readers=["a1", "a2"])
    other = point(axis(2), readers=["a3"])
    index.upsert(NS, [public, named, other])

    hits = index.search_dense(NS, axis(0), PointFilter(readers_any=("a2", "*")), 10)

    assert sorted(ids_of(hits)) == sorted([public.id, named.id])


def test_a_repeated_scope_filter_answers_for_its_own_readers_each_time(
    index: VectorIndex,
) -> None:
    """The Edge adapter keeps the engine filter of a scope filter it has seen (searches repeat
    them): alternating two callers' filters, each must still get only its own points."""
    mine = point(axis(0), words={7: 1.0}, user="u1", readers=["a1"])
    theirs = point(axis(1), words={7: 1.0}, user="u1", readers=["a2"])
    index.upsert(NS, [mine, theirs])
    first = PointFilter(user_id="u1", readers_any=("a1",), active_only=True)
    second = PointFilter(user_id="u1", readers_any=("a2",), active_only=True)

    for _ in range(2):
        for where, expected in ((first, mine), (second, theirs)):
            for hits in (
                index.search_dense(NS, axis(2), where, 10),
                index.search_sparse(NS, sparse({7: 1.0}), where, 10),
            ):
                assert ids_of(hits) == [expected.id]
        same_fields = PointFilter(user_id="u1", readers_any=("a1",), active_only=True)
        assert ids_of(index.search_dense(NS, axis(2), same_fields, 10)) == [mine.id]


def test_filter_active_only_hides_inactive(index: VectorIndex) -> None:
    inactive = point(axis(0), is_active=0)
    active = point(axis(1), is_active=1)
    index.upsert(NS, [inactive, active])

    hits = index.search_dense(NS, axis(0), PointFilter(active_only=True), 10)

    assert ids_of(hits) == [active.id]
    assert len(index.search_dense(NS, axis(0), ALL, 10)) == 2


def test_filter_note_type_exact_match(index: VectorIndex) -> None:
    fact = point(axis(0), note_type="fact")
    index.upsert(NS, [fact, point(axis(0), note_type="episode")])

    assert ids_of(index.search_dense(NS, axis(0), PointFilter(note_type="fact"), 10)) == [fact.id]


def test_filter_topic_tags_require_every_tag(index: VectorIndex) -> None:
    both = point(axis(0), topic_tags=["h1", "h2", "h3"])
    one = point(axis(0), topic_tags=["h1"])
    none = point(axis(0), topic_tags=[])
    index.upsert(NS, [both, one, none])

    assert ids_of(index.search_dense(NS, axis(0), PointFilter(topic_tags=("h1", "h2")), 10)) == [
        both.id
    ]
    assert sorted(index.scroll_ids(NS, PointFilter(topic_tags=("h1",)))) == sorted(
        [both.id, one.id]
    )


def test_filter_exclude_ids_leaves_them_out(index: VectorIndex) -> None:
    best, second, third = point(axis(0)), point(mix((0, 1.0), (1, 0.5))), point(axis(1))
    index.upsert(NS, [best, second, third])

    hits = index.search_dense(NS, axis(0), PointFilter(exclude_ids=(best.id.upper(),)), 10)

    assert ids_of(hits) == [second.id, third.id]


def test_filter_only_ids_restricts_to_them(index: VectorIndex) -> None:
    a, b, c = point(axis(0)), point(mix((0, 1.0), (1, 0.5))), point(axis(1))
    index.upsert(NS, [a, b, c])

    where = PointFilter(only_ids=(b.id, c.id.upper(), new_id()))

    assert ids_of(index.search_dense(NS, axis(0), where, 10)) == [b.id, c.id]
    assert index.count(NS, where) == 2
    assert index.count(NS, PointFilter(only_ids=(b.id, c.id), exclude_ids=(c.id,))) == 1


def test_filter_all_fields_combined_and(index: VectorIndex) -> None:
    match = point(axis(0), readers=["*"], topic_tags=["h1", "h2"])
    index.upsert(
        NS,
        [
            match,
            point(axis(0), readers=["*"], topic_tags=["h1"]),
            point(axis(0), readers=["*"], topic_tags=["h1", "h2"], is_active=0),
            point(axis(0), readers=["*"], topic_tags=["h1", "h2"], note_type="episode"),
            point(axis(0), readers=["*"], topic_tags=["h1", "h2"], agent="a9"),
            point(axis(0), readers=["zz"], topic_tags=["h1", "h2"]),
        ],
    )
    where = PointFilter(
        user_id="u1",
        agent_id="a1",
        readers_any=("*",),
        active_only=True,
        note_type="fact",
        topic_tags=("h1", "h2"),
    )

    assert ids_of(index.search_dense(NS, axis(0), where, 10)) == [match.id]
    assert index.count(NS, where) == 1
    assert index.count(NS, PointFilter(**{**_fields(where), "exclude_ids": (match.id,)})) == 0


def _fields(where: PointFilter) -> dict:
    return {name: getattr(where, name) for name in where.__slots__}


# -- namespaces isolate -------------------------------------------------------------------------


def test_namespaces_isolate_same_ids(index: VectorIndex) -> None:
    shared_id = new_id()
    index.upsert("tenantA", [point(axis(0), pid=shared_id, note_type="a-side")])
    index.upsert("tenantB", [point(axis(0), pid=shared_id, note_type="b-side")])
    only_b = point(axis(0, 1.0), words={5: 1.0})
    index.upsert("tenantB", [only_b])

    hits_a = index.search_dense("tenantA", axis(0), ALL, 10)
    sparse_a = index.search_sparse("tenantA", sparse({5: 1.0}), ALL, 10)
    hybrid_a = index.search_hybrid("tenantA", axis(0), sparse({5: 1.0}), ALL, 10, 10)

    assert [(h.id, h.payload["note_type"]) for h in hits_a] == [(shared_id, "a-side")]
    assert sparse_a == []
    assert ids_of(hybrid_a) == [shared_id]
    index.delete("tenantA", [shared_id])
    assert index.retrieve("tenantB", [shared_id])[0].payload["note_type"] == "b-side"
    assert index.count("tenantB", ALL) == 2


# -- sparse search ------------------------------------------------------------------------------


def test_search_sparse_is_a_plain_dot_product_without_store_idf(index: VectorIndex) -> None:
    """No IDF modifier in the store (issue 32): the query's own weights carry the IDF.

    A store IDF would count every point of the partition, other agents' private notes too.
    """
    common_token, rare_token = 100, 200
    commons = [point(axis(0), words={common_token: 1.5}) for _ in range(9)]
    rare = point(axis(1), words={rare_token: 1.0})
    index.upsert(NS, [*commons, rare, point(axis(2), words={999: 1.0})])

    unit = index.search_sparse(NS, sparse({common_token: 1.0, rare_token: 1.0}), ALL, 20)
    weighted = index.search_sparse(NS, sparse({common_token: 0.5, rare_token: 2.0}), ALL, 20)

    assert unit[0].score == pytest.approx(1.5, rel=1e-6)  # a common point: 1.0 x 1.5
    assert ids_of(unit)[-1] == rare.id and unit[-1].score == pytest.approx(1.0, rel=1e-6)
    assert weighted[0].id == rare.id and weighted[0].score == pytest.approx(2.0, rel=1e-6)
    assert weighted[1].score == pytest.approx(0.75, rel=1e-6)


def test_count_by_term_is_document_frequency_under_the_filter(index: VectorIndex) -> None:
    """`PointFilter.term` counts the points whose `terms` hold a token id: BM25's df."""
    index.upsert(
        NS,
        [
            point(axis(0), words={7: 1.0, 8: 0.5}, user="u1"),
            point(axis(1), words={7: 0.3}, user="u1"),
            point(axis(2), words={7: 0.3}, user="u1", readers=["other"]),
            point(axis(2), words={7: 0.3}, user="u2"),
        ],
    )
    mine = PointFilter(user_id="u1", readers_any=("a1",), active_only=True)

    assert index.count(NS, PointFilter(user_id="u1", term=7)) == 3
    assert index.count(NS, replace(mine, term=7)) == 2
    assert index.count(NS, replace(mine, term=8)) == 1
    assert index.count(NS, replace(mine, term=9)) == 0


def test_search_sparse_applies_filter(index: VectorIndex) -> None:
    mine = point(axis(0), words={1: 0.5}, user="u1")
    index.upsert(NS, [mine, point(axis(0), words={1: 2.0}, user="u2")])

    hits = index.search_sparse(NS, sparse({1: 1.0}), PointFilter(user_id="u1"), 10)

    assert ids_of(hits) == [mine.id]


# -- hybrid fusion ------------------------------------------------------------------------------


FUSION_QUERY = (axis(0), sparse({1: 1.0, 2: 1.0}))
"""The query of the fusion cases: dense along axis 0, sparse over the tokens 1 and 2."""


def _fusion_points(index: VectorIndex) -> dict[str, str]:
    """Dense favours A, sparse favours B, C is second on both; X (user u2) is best on both.

    dense ranks (query axis 0): X, A, C, D, B      sparse ranks ({1, 2}): X, B, C, D (A none)
    """
    pts = {
        "X": point(axis(0), words={1: 3.0, 2: 3.0}, user="u2"),
        "A": point(mix((0, 1.0), (1, 0.1)), words={7: 1.0}),
        "C": point(mix((0, 1.0), (1, 0.5)), words={1: 1.0}),
        "D": point(mix((0, 1.0), (1, 1.0)), words={2: 0.5}),
        "B": point(mix((0, 1.0), (1, 3.0)), words={1: 1.0, 2: 1.0}),
    }
    index.upsert(NS, list(pts.values()))
    return {name: p.id for name, p in pts.items()}


def _hybrid(index: VectorIndex, **kw: Any) -> tuple[list[str], list[Hit]]:
    """Store the fusion points and run `search_hybrid` for the known query inside u1 (`kw`:
    limit, prefetch and the fusion's options); the names of the hits, and the hits."""
    ids = _fusion_points(index)
    name = {v: k for k, v in ids.items()}
    hits = index.search_hybrid(NS, *FUSION_QUERY, PointFilter(user_id="u1"), **kw)
    return [name[h.id] for h in hits], hits


def test_search_hybrid_second_on_both_wins_fusion(index: VectorIndex) -> None:
    order, hits = _hybrid(index, limit=3, prefetch=3)

    # Prefetch 3 inside u1: dense A, C, D; sparse B, C, D. RRF (k=60, rank from 0):
    # C = 2/61, D = 2/62, A = B = 1/60.
    assert order[:2] == ["C", "D"]
    assert order[2] in {"A", "B"}
    assert hits[0].score == pytest.approx(2 / 61, rel=1e-4)
    assert hits[1].score == pytest.approx(2 / 62, rel=1e-4)
    assert hits[2].score == pytest.approx(1 / 60, rel=1e-4)
    assert hits[0].payload["user_id"] == "u1"


def test_search_hybrid_weights_favour_the_heavier_list(index: VectorIndex) -> None:
    order, hits = _hybrid(index, limit=3, prefetch=3, weights=(2.0, 1.0))

    # Weighted RRF: rank r (1-based) in a list of weight w scores 1 / (r / w + k - 1).
    # Dense A, C, D; sparse B, C, D. C = 1/60 + 1/61, D = 1/60.5 + 1/62, A = 1/59.5, B = 1/60:
    # unweighted, A and B tie for third; weighting dense twice puts A there.
    assert order == ["C", "D", "A"]
    assert hits[0].score == pytest.approx(1 / 60 + 1 / 61, rel=1e-4)
    assert hits[2].score == pytest.approx(1 / 59.5, rel=1e-4)


def test_search_hybrid_rrf_k_sets_the_fusion_constant(index: VectorIndex) -> None:
    order, hits = _hybrid(index, limit=3, prefetch=3, weights=(0.1, 1.0), rrf_k=5)

    # k = 5, dense weight 0.1: dense rank r scores 1 / (10 r + 4), sparse rank r 1 / (r + 4).
    # C = 1/24 + 1/6, B (sparse first, no dense rank) = 1/5, D = 1/34 + 1/7, A (dense first
    # only) = 1/14: the dense leader A drops out, which at k = 60 it would not (1/59.5 vs 1/60).
    assert order == ["C", "B", "D"]
    assert hits[0].score == pytest.approx(1 / 24 + 1 / 6, rel=1e-4)
    assert hits[1].score == pytest.approx(1 / 5, rel=1e-4)
    assert hits[2].score == pytest.approx(1 / 34 + 1 / 7, rel=1e-4)


def test_search_hybrid_filter_applies_inside_both_prefetches(index: VectorIndex) -> None:
    ids = _fusion_points(index)
    name = {v: k for k, v in ids.items()}

    unfiltered = index.search_hybrid(NS, *FUSION_QUERY, ALL, limit=3, prefetch=3)
    filtered = index.search_hybrid(NS, *FUSION_QUERY, PointFilter(user_id="u1"), 3, 3)

    # Unfiltered, X is best on both lists and wins; D is pushed out of both top-3 lists.
    assert name[unfiltered[0].id] == "X"
    assert "D" not in {name[h.id] for h in unfiltered}
    # Filtered, X never appears and D comes second: the filter ran before each prefetch's cut.
    # Filtering after fusion would have left C (at 2/62), A and B, and no D.
    assert ids["X"] not in ids_of(filtered)
    assert [name[h.id] for h in filtered[:2]] == ["C", "D"]
    assert filtered[0].score == pytest.approx(2 / 61, rel=1e-4)


def test_search_hybrid_prefetch_below_limit_takes_limit_candidates(index: VectorIndex) -> None:
    order, hits = _hybrid(index, limit=4, prefetch=1)

    # Each prefetch takes max(prefetch, limit) = 4: dense A, C, D, B; sparse B, C, D.
    assert order == ["C", "B", "D", "A"]
    assert hits[1].score == pytest.approx(1 / 60 + 1 / 63, rel=1e-4)


def test_search_hybrid_point_without_sparse_still_found_by_dense(index: VectorIndex) -> None:
    dense_only = point(axis(0))
    index.upsert(NS, [dense_only, point(axis(1), words={1: 1.0})])

    hits = index.search_hybrid(NS, axis(0), sparse({1: 1.0}), ALL, 5, 5)

    assert dense_only.id in ids_of(hits)


# -- concurrency --------------------------------------------------------------------------------


def test_concurrent_upserts_and_searches_lose_nothing(index: VectorIndex) -> None:
    per_thread, batch = 60, 6
    written: list[list[str]] = [[] for _ in range(4)]
    start = threading.Barrier(4)

    def worker(n: int) -> None:
        start.wait()
        ns = NS if n % 2 == 0 else "tenant2"
        for b in range(per_thread // batch):
            pts = [
                point(mix((n, 1.0), ((b + i) % DIM, 0.3)), words={n: 1.0, b: 0.5}, user=f"u{n}")
                for i in range(batch)
            ]
            index.upsert(ns, pts)
            written[n].extend(p.id for p in pts)
            index.search_dense(ns, axis(n), PointFilter(user_id=f"u{n}"), 5)
            index.search_hybrid(ns, axis(n), sparse({n: 1.0}), ALL, 5, 10)
            index.count(ns, ALL)

    assert run_threads(worker, 4) == []
    assert index.count(NS, ALL) == 2 * per_thread
    assert index.count("tenant2", ALL) == 2 * per_thread
    for n in range(4):
        ns = NS if n % 2 == 0 else "tenant2"
        assert sorted(index.scroll_ids(ns, PointFilter(user_id=f"u{n}"))) == sorted(written[n])

"""Daily consolidation planning and merging: pure functions over one scope's notes."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memvault.amem.consolidate import (
    MergeGroup,
    plan_consolidation,
)
from memvault.amem.thresholds import thresholds_for
from memvault.amem.views import NoteView
from memvault.embed.base import Embedder


def _unit(degrees: float, dim: int = 3) -> list[float]:
    """A unit vector at `degrees` in the first plane: cos(a - b) is the cosine of two."""
    v = [0.0] * dim
    v[0], v[1] = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    return v


def _note(note_id: str, created_at: float, degrees: float | None = 0.0, **kw: object) -> NoteView:
    vector = None if degrees is None else _unit(degrees)
    kw.setdefault("category", "Personal")
    kw.setdefault("text", f"note {note_id} says something long enough")
    return NoteView(id=note_id, created_at=created_at, vector=vector, **kw)  # type: ignore[arg-type]


# --- planning -----------------------------------------------------------------------------


def test_near_duplicates_group_under_the_oldest() -> None:
    notes = [
        _note("c", 30, 2.0),
        _note("a", 10, 0.0),
        _note("far", 5, 90.0),
        _note("b", 20, 1.0),
    ]
    assert plan_consolidation(notes, 0.9) == [MergeGroup("a", ("b", "c"), "Personal")]


def test_no_group_below_threshold_and_singletons_are_not_groups() -> None:
    notes = [_note("a", 1, 0.0), _note("b", 2, 60.0), _note("c", 3, 120.0)]
    assert plan_consolidation(notes, 0.75) == []
    assert plan_consolidation(notes[:1], 0.1) == []
    assert plan_consolidation([], 0.75) == []


@pytest.mark.parametrize(
    "ineligible",
    [
        {"note_type": "knowledge"},
        {"shared": True},
        {"writable": False},
        {"conflict": True},
    ],
    ids=["knowledge", "shared", "read-only", "conflict"],
)
def test_ineligible_notes_are_never_in_a_group(ineligible: dict[str, object]) -> None:
    oldest = _note("x", 1, 0.0, **ineligible)  # the oldest, so it would be the survivor
    notes = [oldest, _note("a", 2, 0.0), _note("b", 3, 0.0), _note("y", 4, 0.0, **ineligible)]
    groups = plan_consolidation(notes, 0.9)
    assert groups == [MergeGroup("a", ("b",), "Personal")]
    # with a single eligible note left there is nothing to merge at all
    assert plan_consolidation([oldest, _note("a", 2, 0.0), notes[3]], 0.9) == []


def test_notes_without_a_usable_vector_are_skipped() -> None:
    notes = [
        _note("none", 1, None),
        NoteView("empty", "an empty vector here", 2, category="Personal", vector=[]),
        NoteView("nan", "a vector with a NaN", 3, category="Personal", vector=[math.nan, 0, 0]),
        NoteView("zero", "a zero vector here", 4, category="Personal", vector=[0.0, 0.0, 0.0]),
        _note("a", 5, 0.0),
        _note("b", 6, 0.0),
    ]
    assert plan_consolidation(notes, 0.9) == [MergeGroup("a", ("b",), "Personal")]


def test_different_categories_never_merge_and_none_is_general() -> None:
    notes = [
        _note("p", 1, 0.0, category="Personal"),
        _note("t", 2, 0.0, category="Technical"),
        _note("n", 3, 0.0, category=None),
        _note("g", 4, 0.0, category="General"),
        _note("t2", 5, 0.0, category="Technical"),
    ]
    assert plan_consolidation(notes, 0.9) == [
        MergeGroup("t", ("t2",), "Technical"),
        MergeGroup("n", ("g",), "General"),
    ]


def test_ephemeral_and_durable_notes_never_merge() -> None:
    notes = [_note("d", 1, 0.0), _note("e", 2, 0.0, ephemeral=True)]
    assert plan_consolidation(notes, 0.9) == []


def test_chain_is_not_collapsed_b_joins_its_closer_neighbour() -> None:
    """Complete-link, as the docstring says: A~B (cos 25°) and B~C, A≁C (cos 55° < 0.85)."""
    threshold = 0.85
    assert math.cos(math.radians(55)) < threshold <= math.cos(math.radians(30))
    # B is closer to A (25°) than to C (30°): {A, B}, C alone
    notes = [_note("A", 1, 0.0), _note("B", 2, 25.0), _note("C", 3, 55.0)]
    assert plan_consolidation(notes, threshold) == [MergeGroup("A", ("B",), "Personal")]
    # B is closer to C (20°) than to A (25°): {B, C} with B (the older) surviving, A alone
    notes = [_note("A", 1, 0.0), _note("B", 2, 25.0), _note("C", 3, 45.0)]
    assert plan_consolidation(notes, threshold) == [MergeGroup("B", ("C",), "Personal")]
    # a long drifting chain (each step 20°) becomes pairs, never one note
    chain = [_note(f"n{i}", i, 20.0 * i) for i in range(6)]
    groups = plan_consolidation(chain, 0.9)
    assert groups and all(len(g.absorbed_ids) == 1 for g in groups)


def test_plan_is_deterministic_regardless_of_input_order() -> None:
    notes = [_note(f"n{i}", i // 2, 3.0 * (i % 4) + 40.0 * (i // 4)) for i in range(16)]
    expected = plan_consolidation(notes, 0.95)
    assert expected
    rng = random.Random(7)
    for _ in range(5):
        shuffled = notes[:]
        rng.shuffle(shuffled)
        assert plan_consolidation(shuffled, 0.95) == expected
    # same created_at: the smaller id is the older
    tie = [_note("b", 1, 0.0), _note("a", 1, 0.0)]
    assert plan_consolidation(tie, 0.9) == [MergeGroup("a", ("b",), "Personal")]


def test_groups_never_exceed_the_merged_text_bound() -> None:
    big = "word " * 3_500  # 17,500 characters: two of them do not fit in 32,000
    notes = [_note("a", 1, 0.0, text=big), _note("b", 2, 0.0, text=big + "x")]
    assert plan_consolidation(notes, 0.9) == []
    notes.append(_note("c", 3, 0.0, text="a short near-duplicate note"))
    assert plan_consolidation(notes, 0.9) == [MergeGroup("a", ("c",), "Personal")]


@pytest.mark.parametrize("threshold", [0.0, -0.5, 1.5, math.nan])
def test_threshold_must_be_a_cosine(threshold: float) -> None:
    with pytest.raises(ValueError):
        plan_consolidation([_note("a", 1), _note("b", 2)], threshold)


@settings(max_examples=60, deadline=None)
@given(
    angles=st.lists(st.floats(0, 180, allow_nan=False), min_size=2, max_size=14),
    threshold=st.floats(0.5, 0.99),
)
def test_every_pair_in_a_group_is_above_threshold(angles: list[float], threshold: float) -> None:
    notes = [_note(f"n{i:02d}", float(i % 5), a) for i, a in enumerate(angles)]
    by_id = {n.id: n for n in notes}
    groups = plan_consolidation(notes, threshold)
    used: list[str] = []
    for group in groups:
        ids = [group.survivor_id, *group.absorbed_ids]
        used += ids
        members = [by_id[i] for i in ids]
        assert members[0] == min(members, key=lambda n: (n.created_at, n.id))
        for x in members:
            for y in members:
                cos = float(np.dot(x.vector, y.vector))  # type: ignore[arg-type]
                assert cos >= threshold - 1e-6
    assert len(used) == len(set(used))


# --- idempotence with real USE vectors ----------------------------------------------------

PARAPHRASES = [
    (
        "The user's sister works in finance in Northvale",
        "User's sister works in finance, Northvale",
    ),
    ("The user has a dog named Biscuit", "The user's dog is called Biscuit"),
    (
        "The user prefers dark roast coffee in the morning",
        "User likes dark roast coffee every morning",
    ),
]
UNRELATED = ["The project deadline is Friday", "The team's database migration runs on Postgres 16"]


@pytest.fixture(scope="module")
def use_embedder(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    from memvault.embed import make_embedder

    model = make_embedder("use-m3", data_dir=Path(tmp_path_factory.mktemp("embed")))
    model.embed_documents(["warm up"])
    return model


def _embedded(embedder: Embedder, rows: Sequence[tuple[str, str, float]]) -> list[NoteView]:
    vectors = embedder.embed_documents([text for _, text, _ in rows])
    return [
        NoteView(id=i, text=t, created_at=c, category="Personal", vector=v.tolist())
        for (i, t, c), v in zip(rows, vectors, strict=True)
    ]


def _corpus(embedder: Embedder) -> list[NoteView]:
    rows: list[tuple[str, str, float]] = []
    for k, (older, newer) in enumerate(PARAPHRASES):
        rows += [(f"p{k}-old", older, 100.0 + k), (f"p{k}-new", newer, 200.0 + k)]
    rows += [(f"u{k}", text, 300.0 + k) for k, text in enumerate(UNRELATED)]
    return _embedded(embedder, rows)


def test_paraphrases_group_and_planning_the_rest_finds_nothing(use_embedder: Embedder) -> None:
    notes = _corpus(use_embedder)
    groups = plan_consolidation(notes, 0.75)  # openclaw-amem's value; the pairs are >= 0.8
    assert groups == [
        MergeGroup(f"p{k}-old", (f"p{k}-new",), "Personal") for k in range(len(PARAPHRASES))
    ]
    # the later paraphrases, related to the oldest as restatements, leave the next plan
    after = [n for n in notes if not n.id.endswith("-new")]
    assert plan_consolidation(after, 0.75) == []


def test_idempotent_at_the_use_threshold(use_embedder: Embedder) -> None:
    threshold = thresholds_for("use-m3").consolidate  # may be recalibrated: assert no values
    notes = _corpus(use_embedder)
    groups = plan_consolidation(notes, threshold)
    assert all(g.survivor_id.endswith("-old") for g in groups)
    related = {i for g in groups for i in g.absorbed_ids}
    assert plan_consolidation([n for n in notes if n.id not in related], threshold) == []

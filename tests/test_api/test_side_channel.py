"""No side channel between agents (issue 32): a key's results never depend on notes it cannot read.

Two deployments get the same notes from agent `writer` (and a note shared with every agent),
written in the same order; in the second, agent `planner` of the same user also writes private
notes full of the query's words, and notes it shares with another agent only. Every search
mode (and both fusions) must then answer `writer` with the same notes in the same order and
the same scores in both. Before issue 32 the store's BM25 IDF counted planner's notes: the
trial's "zebra office" score fell from 2.12 to 0.33. Two deployments rather than one before
and after, because a search itself moves the heat of the notes it returns (full mode).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.apiclient import Api
from tests.conftest import ServicesFactory

WRITER_NOTES = (
    "The zebra office moved to the third floor near the kitchen",
    "Alice keeps her bike in the garage on rainy days",
    "The quarterly review happens in the zebra meeting room",
    "Alice's office plant needs water every Tuesday",
    "Lunch with the design team is on Friday at noon",
    "The office printer jams when the tray is overfilled",
)
SHARED_NOTE = "Team rule: the zebra office is quiet before ten in the morning"
PLANNER_PRIVATE = [f"zebra office plan {i}: zebra zebra office office review" for i in range(15)]
PLANNER_TO_ASSISTANT = ["zebra office budget for the assistant only", "office zebra printer codes"]
QUERIES = ("zebra office", "where is the zebra office?", "office printer", "bike")
MODES: tuple[dict[str, Any], ...] = (
    {"mode": "dense"},
    {"mode": "sparse"},
    {"mode": "hybrid"},
    {"mode": "hybrid", "fusion": "rrf"},
    {"mode": "full"},
    {"mode": "full", "fusion": "rrf"},
)


def _world(api: Api, *, planner_writes: bool) -> dict[str, str]:
    writer = api.agent_key("acme", "alice", "writer")
    planner = api.agent_key("acme", "alice", "planner")
    assistant = api.agent_key("acme", "alice", "assistant")
    if planner_writes:  # before writer's notes too: no statistic of theirs may carry over
        for text in PLANNER_PRIVATE[:5]:
            api.add(planner, text)
    for text in WRITER_NOTES:
        api.add(writer, text)
    api.add(assistant, SHARED_NOTE, visibility="shared")
    if planner_writes:
        for text in PLANNER_PRIVATE[5:]:
            api.add(planner, text)
        for text in PLANNER_TO_ASSISTANT:
            api.add(planner, text, readers=["planner", "assistant"])
        # They are there, in the same user's partition. (Listed, not searched: a search
        # would raise the heat of the shared note, a note writer reads, which is no leak.)
        assert api.call("GET", "/v1/memories", planner).json()["total"] == 18
    return {"writer": writer, "planner": planner}


def _answers(api: Api, key: str) -> list[list[tuple[str, float]]]:
    out = []
    for query in QUERIES:
        for body in MODES:
            results = api.search(key, query, limit=10, **body)
            # Heat counts reach the rows now, not when the 2 s flusher happens to run, so both
            # deployments rank with the same counts (heat is writer's own reads, no leak).
            api.services.vault.parts.retrievals.flush()
            out.append([(r["text"], r["score"]) for r in results])
    return out


@pytest.mark.parametrize("amem", [False, True], ids=["amem-off", "amem-on"])
def test_other_agents_private_notes_move_no_result_or_score(
    make_services: ServicesFactory, backend: str, amem: bool
) -> None:
    quiet = Api(make_services(backend, amem=amem))
    busy = Api(make_services(backend, amem=amem))
    quiet_keys = _world(quiet, planner_writes=False)
    busy_keys = _world(busy, planner_writes=True)

    expected = _answers(quiet, quiet_keys["writer"])
    got = _answers(busy, busy_keys["writer"])

    assert any(expected), "the queries find writer's notes"
    for want, have in zip(expected, got, strict=True):
        assert [t for t, _ in have] == [t for t, _ in want]
        assert [s for _, s in have] == pytest.approx([s for _, s in want], rel=1e-9, abs=1e-12)
    texts = {t for answer in got for t, _ in answer}
    assert not texts & {*PLANNER_PRIVATE, *PLANNER_TO_ASSISTANT}


def test_writer_sees_within_one_deployment_the_same_bm25_scores(
    make_services: ServicesFactory, backend: str
) -> None:
    """The trial's steps in one deployment: writer's BM25 score before and after planner writes.

    BM25 (`sparse`) has no heat, so in one deployment writer's scores stand still too.
    """
    api = Api(make_services(backend))
    writer = api.agent_key("acme", "alice", "writer")
    planner = api.agent_key("acme", "alice", "planner")
    for text in WRITER_NOTES:
        api.add(writer, text)
    before = api.search(writer, "zebra office", mode="sparse")

    for text in PLANNER_PRIVATE:
        api.add(planner, text)
    after = api.search(writer, "zebra office", mode="sparse")

    assert [r["id"] for r in after] == [r["id"] for r in before]
    assert [r["score"] for r in after] == pytest.approx([r["score"] for r in before], rel=1e-9)

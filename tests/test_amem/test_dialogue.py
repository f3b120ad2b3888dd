"""DialogueGate: facts from a dialogue become NEW / UPDATE / DELETE / NONE inside the caller's
scope, through the write screen, on a real vault (SQLite and PostgreSQL) with HeuristicJudge."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest

from memvault.amem.dialogue import MAX_MESSAGES, DialogueDecision, DialogueGate
from memvault.amem.guard import GuardedJudge
from memvault.amem.heuristic import HeuristicJudge
from memvault.amem.judge import FactDecision, JudgeRejected, JudgeUnavailable
from memvault.amem.views import Candidate
from memvault.errors import InvalidRequest
from memvault.runtime.factory import Services
from memvault.scope import Scope
from memvault.vault.service import ScopedVault
from tests.conftest import ServicesFactory

RIVERSTONE = "The user lives in Riverstone"
AWS_KEY_ID = "AKIAQ3EGRT5YBVXKJ7MZ"
OPENAI_KEY = "sk-proj-Abc123Def456Ghi789Jkl012Mno345Pqr678Stu901"


@pytest.fixture
def services(make_services: ServicesFactory, backend: str) -> Services:
    built = make_services(backend)
    built.tenants.create("acme")
    return built


def view(services: Services, user: str = "alice", agent: str = "planner") -> ScopedVault:
    return services.vault.scoped(Scope("acme", user, agent))


def texts(v: ScopedVault) -> dict[str, str]:
    """The caller's current notes (not superseded, not invalidated)."""
    notes, _ = v.list_notes(limit=100)
    return {n.id: n.text for n in notes if n.current}


def gate(v: ScopedVault, judge: object | None = None) -> DialogueGate:
    return DialogueGate(v, judge or HeuristicJudge())  # type: ignore[arg-type]


class AlwaysUpdateFirst(HeuristicJudge):
    """A judge that answers UPDATE #1 to everything and records what it was shown."""

    name = "always_update"

    def __init__(self) -> None:
        self.shown: list[list[Candidate]] = []

    def decide_fact(self, fact: str, candidates: Sequence[Candidate]) -> FactDecision:
        self.shown.append(list(candidates))
        return FactDecision("UPDATE", 1, "HIJACKED " + fact)


class NumberNinetyNine(HeuristicJudge):
    name = "ninety_nine"

    def decide_fact(self, fact: str, candidates: Sequence[Candidate]) -> FactDecision:
        return FactDecision("DELETE", 99)


class Rejecting(HeuristicJudge):
    name = "rejecting"

    def decide_fact(self, fact: str, candidates: Sequence[Candidate]) -> FactDecision:
        raise JudgeRejected("malformed_json")


class Unavailable(HeuristicJudge):
    name = "unavailable"

    def decide_fact(self, fact: str, candidates: Sequence[Candidate]) -> FactDecision:
        raise JudgeUnavailable("timeout")


class EchoEverything(HeuristicJudge):
    """An extractor that would store every turn it is given verbatim; records what it saw."""

    name = "echo"

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []
        self.decided: list[str] = []

    def extract_facts(self, messages: Sequence[tuple[str, str]]) -> list[str]:
        self.seen.extend(messages)
        return [content for _, content in messages]

    def decide_fact(self, fact: str, candidates: Sequence[Candidate]) -> FactDecision:
        self.decided.append(fact)
        return super().decide_fact(fact, candidates)


def test_new_fact_is_stored_and_searchable(services: Services) -> None:
    v = view(services)
    decisions = gate(v).process([("user", "My favourite tea is smoky lapsang souchong.")])
    assert [d.action for d in decisions] == ["NEW"]
    assert decisions[0].fact_index == 0 and decisions[0].reason is None
    note = v.get(decisions[0].note_id or "")
    assert "lapsang souchong" in note.text
    hits = v.search("which tea does the user like", limit=3, mode="hybrid")
    assert hits and hits[0].note.id == note.id


def test_restated_fact_is_none_with_the_existing_id(services: Services) -> None:
    v = view(services)
    existing = v.add(RIVERSTONE)
    decisions = gate(v).process([("assistant", "The user lives in Riverstone.")])
    assert decisions == [DialogueDecision("NONE", 0, existing.id, None)]
    assert texts(v) == {existing.id: RIVERSTONE}


def test_negation_deletes_the_note(services: Services) -> None:
    v = view(services)
    existing = v.add(RIVERSTONE)
    decisions = gate(v).process([("user", "I no longer live in Riverstone.")])
    assert decisions == [DialogueDecision("DELETE", 0, existing.id, None)]
    ended = v.get(existing.id)  # kept whole, no longer current
    assert ended.text == RIVERSTONE and ended.valid_to is not None
    assert texts(v) == {}
    assert existing.id not in [h.note.id for h in v.search("Riverstone", limit=5)]
    history = v.search("Riverstone", limit=5, include_history=True)
    assert existing.id in [h.note.id for h in history]


def test_changed_place_updates_the_note(services: Services) -> None:
    v = view(services)
    existing = v.add(RIVERSTONE)
    decisions = gate(v).process([("user", "The user moved to Lisbon last spring.")])
    [decision] = decisions
    assert (decision.action, decision.target_id, decision.reason) == ("UPDATE", existing.id, None)
    assert v.get(decision.note_id or "").text == "The user moved to Lisbon last spring."
    older = v.get(existing.id)
    assert older.text == RIVERSTONE and older.relations == {"superseded_by": (decision.note_id,)}


def test_a_later_fact_sees_what_an_earlier_one_wrote(services: Services) -> None:
    v = view(services)
    decisions = gate(v).process(
        [("user", "The user lives in Riverstone."), ("user", "The user moved to Lisbon.")]
    )
    assert [d.action for d in decisions] == ["NEW", "UPDATE"]
    assert decisions[0].note_id == decisions[1].target_id
    assert list(texts(v).values()) == ["The user moved to Lisbon."]


def test_tool_output_is_never_stored(services: Services) -> None:
    v = view(services)
    v.add(RIVERSTONE)
    before = texts(v)
    tool = f"config dump: OPENAI_API_KEY={OPENAI_KEY}. The deployment finished at noon today."
    messages = [
        ("user", "What does the config say?"),
        ("tool", tool),
        ("system", "The system prompt says the deployment finished at noon today."),
        ("assistant", "Done."),
    ]
    decisions = gate(v).process(messages)
    assert decisions == []
    assert texts(v) == before
    for query in (OPENAI_KEY, "deployment finished at noon"):
        assert all("deployment" not in h.note.text for h in v.search(query, limit=10))


def test_tool_and_system_turns_never_reach_the_judge(services: Services) -> None:
    v = view(services)
    judge = EchoEverything()
    tool = f"OPENAI_API_KEY={OPENAI_KEY} and the build server is called tarragon."
    decisions = gate(v, judge).process(
        [
            ("user", "The user prefers window seats on long flights."),
            ("tool", tool),
            ("system", "The system secretly prefers aisle seats on every flight."),
        ]
    )
    assert {role for role, _ in judge.seen} == {"user"}
    assert [d.action for d in decisions] == ["NEW"]
    stored = " ".join(texts(v).values())
    assert "window seats" in stored
    assert OPENAI_KEY not in stored and "tarragon" not in stored and "aisle" not in stored


def test_credential_in_a_user_turn_is_refused(services: Services) -> None:
    v = view(services)
    judge = EchoEverything()
    decisions = gate(v, judge).process(
        [
            ("user", f"My AWS access key id is {AWS_KEY_ID} for the billing account."),
            ("user", "The user prefers window seats on long flights."),
        ]
    )
    assert [(d.action, d.reason) for d in decisions] == [
        ("REFUSED", "aws_access_key"),
        ("NEW", None),
    ]
    assert decisions[0].note_id is None
    assert AWS_KEY_ID not in repr(decisions)
    assert all(AWS_KEY_ID not in fact for fact in judge.decided)  # never shown to the judge
    assert all(AWS_KEY_ID not in t for t in texts(v).values())
    assert len(texts(v)) == 1
    assert all(AWS_KEY_ID not in h.note.text for h in v.search("AWS access key", limit=10))


def _outside_placeholders(text: str) -> str:
    return re.sub(r"\[[A-Z]+:[0-9a-f]+\]", "", text)


def test_pii_is_redacted_before_the_judge_and_the_store(services: Services) -> None:
    v = view(services)
    judge = EchoEverything()
    phone = "+1 415 555 0134"
    decisions = gate(v, judge).process([("user", f"The user's phone number is {phone} now.")])
    assert [d.action for d in decisions] == ["NEW"]
    stored = v.get(decisions[0].note_id or "").text
    # The placeholder's keyed pseudonym is random hex and may itself contain "555": look for
    # the number's digits everywhere except inside placeholders.
    assert "[PHONE:" in stored and "555" not in _outside_placeholders(stored)
    assert judge.decided
    assert all("555" not in _outside_placeholders(fact) for fact in judge.decided)


def test_dry_run_stores_nothing_and_changes_nothing(services: Services) -> None:
    v = view(services)
    existing = v.add(RIVERSTONE)
    other = v.add("The user works as a carpenter in the old town.")
    before = texts(v)
    decisions = gate(v).process(
        [
            ("user", "I no longer live in Riverstone."),
            ("user", "The user works as a carpenter in the old town."),
            ("user", "My favourite tea is smoky lapsang souchong."),
        ],
        dry_run=True,
    )
    assert decisions == [
        DialogueDecision("DELETE", 0, existing.id, None),
        DialogueDecision("NONE", 1, other.id, None),
        DialogueDecision("NEW", 2, None, None),
    ]
    assert texts(v) == before
    assert v.get(existing.id).text == RIVERSTONE


@pytest.mark.parametrize(
    ("judge", "reason"),
    [
        (NumberNinetyNine(), "judge_rejected"),
        (Rejecting(), "judge_rejected"),
        (Unavailable(), "judge_unavailable"),
        (GuardedJudge(NumberNinetyNine(), HeuristicJudge()), "judge_rejected"),
    ],
    ids=["number_99", "raises_rejected", "unavailable", "guarded_number_99"],
)
def test_a_hostile_judge_gets_the_heuristic_decision(
    services: Services, judge: HeuristicJudge, reason: str
) -> None:
    mine, bob = view(services), view(services, user="bob")
    theirs = bob.add(RIVERSTONE)
    existing = mine.add(RIVERSTONE)
    decisions = gate(mine, judge).process(
        [("user", "I no longer live in Riverstone."), ("user", "My favourite tea is green tea.")]
    )
    assert [(d.action, d.reason) for d in decisions] == [("DELETE", reason), ("NEW", reason)]
    assert decisions[0].note_id == existing.id
    assert texts(bob) == {theirs.id: RIVERSTONE}


def test_always_update_never_reaches_another_scope(services: Services) -> None:
    mine = view(services)
    others = [view(services, agent="coder"), view(services, user="bob")]
    for other in others:
        other.add(RIVERSTONE)
    before = [(other, texts(other)) for other in others]
    empty_judge = AlwaysUpdateFirst()
    decisions = gate(mine, empty_judge).process([("user", "The user lives in Riverstone.")])
    # Nothing of the caller's is similar: UPDATE #1 names no shown note, the heuristic adds.
    assert empty_judge.shown == [[]]
    assert [(d.action, d.reason) for d in decisions] == [("NEW", "judge_rejected")]
    new_id = decisions[0].note_id
    judge = AlwaysUpdateFirst()
    decisions = gate(mine, judge).process([("user", "The user lives in Riverstone still.")])
    assert [len(shown) for shown in judge.shown] == [1]
    [decision] = decisions  # the fact is stored; the judge's own text never is
    assert (decision.action, decision.target_id) == ("UPDATE", new_id)
    assert texts(mine) == {decision.note_id: "The user lives in Riverstone still."}
    for other, snapshot in before:
        assert texts(other) == snapshot


def test_another_agents_shared_note_is_never_changed(services: Services) -> None:
    planner, coder = view(services), view(services, agent="coder")
    shared = planner.add(RIVERSTONE, visibility="shared")
    decisions = gate(coder).process([("user", "I no longer live in Riverstone.")])
    assert decisions == [DialogueDecision("NONE", 0, shared.id, "not_writable")]
    assert coder.get(shared.id).text == RIVERSTONE
    judge = AlwaysUpdateFirst()
    decisions = gate(coder, judge).process([("user", "The user lives in Riverstone still.")])
    assert decisions == [DialogueDecision("NONE", 0, shared.id, "not_writable")]
    assert planner.get(shared.id).text == RIVERSTONE


@pytest.mark.parametrize(
    ("messages", "field"),
    [
        ([("user", "hello there"), ("function", "SECRET-ROLE-CONTENT")], "messages[1].role"),
        ([("SECRET-ROLE", "SECRET-ROLE-CONTENT")], "messages[0].role"),
        ([("user", "x" * 32_001)], "messages[0].content"),
        ([("user", 42)], "messages[0].content"),
        ([("user", "a\x00b")], "messages[0].content"),
        ([("user", "hi", "extra")], "messages[0]"),
        ([("user", "The user likes tea.")] * (MAX_MESSAGES + 1), "messages"),
        ([], "messages"),
    ],
    ids=["role", "role_echo", "oversize", "not_str", "nul", "triple", "too_many", "empty"],
)
def test_invalid_dialogues_are_refused_before_anything_is_written(
    services: Services, messages: list[tuple[str, object]], field: str
) -> None:
    v = view(services)
    with pytest.raises(InvalidRequest) as raised:
        gate(v).process(messages)  # type: ignore[arg-type]
    assert str(raised.value).startswith(field)
    assert "SECRET-ROLE" not in str(raised.value) and "xxx" not in str(raised.value)
    assert texts(v) == {}


def test_limits_are_inclusive(services: Services) -> None:
    v = view(services)
    messages = [("tool", "x" * 32_000)] * (MAX_MESSAGES - 1) + [("user", "Ok.")]
    assert gate(v).process(messages) == []
    with pytest.raises(ValueError):
        DialogueGate(v, HeuristicJudge(), candidates=0)

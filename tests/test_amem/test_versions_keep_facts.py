"""A new version hides only a note that states one fact (issue 31, retrieval with A-MEM on).

A supersession hides the older note whole from default searches. On LoCoMo the offline judge's
intent → decision rule superseded chat turns of several sentences (and by questions, and across
speakers), hiding the turns' other facts: R@10 .800 with A-MEM on, .831 off. `version_action`
records such a decision as `expands` instead, so both notes stay current.
"""

from __future__ import annotations

import pytest

from memvault.amem.heuristic import HeuristicJudge
from memvault.amem.maintenance import _action
from memvault.amem.relating import one_fact, version_action
from memvault.amem.views import Candidate, NoteView
from memvault.amem.wiring import install
from memvault.runtime.factory import Services
from memvault.scope import Scope
from tests.conftest import ServicesFactory

A = Scope("t1", "u1", "a1")
WANTS = "The user wants to buy a Model 3"
DECIDED = "The user decided on the standard RWD Model 3"
TWO_FACTS = f"{WANTS}. Their sister lives in Northvale."


@pytest.mark.parametrize(
    ("new", "old", "action", "expected"),
    [
        (DECIDED, WANTS, "EVOLVE", "EVOLVE"),  # one fact, restated as decided: a new version
        (DECIDED, TWO_FACTS, "EVOLVE", "EXPAND"),  # the sister would be hidden with it
        (DECIDED, f"{WANTS}\nTheir sister lives in Northvale", "UPDATE", "EXPAND"),
        ("Did the user decide on the Model 3?", WANTS, "EVOLVE", "EXPAND"),  # asks, states nothing
        ("Ann: I decided on the Model 3", "Bob: I want to buy a Model 3", "EVOLVE", "EXPAND"),
        ("Ann: I decided on the Model 3", "Ann: I want to buy a Model 3", "EVOLVE", "EVOLVE"),
        ("Bob's colour is blue", "Bob's colour is green", "SUPERSEDE", "SUPERSEDE"),
        (DECIDED, TWO_FACTS, "EXPAND", "EXPAND"),
        (DECIDED, TWO_FACTS, "CONFLICT", "CONFLICT"),  # both stay current anyway
    ],
)
def test_version_action_keeps_supersedes_for_one_fact(
    new: str, old: str, action: str, expected: str
) -> None:
    assert version_action(action, new, old) == expected


def test_one_fact() -> None:
    assert one_fact(WANTS) and one_fact("用户想买一辆特斯拉")
    assert not one_fact("Caroline: Check out my painting for the art show! Hope you like it.")
    assert not one_fact("Any specific areas you want to tackle?")


def test_consolidation_expands_a_note_of_several_facts() -> None:
    def view(i: str, text: str) -> NoteView:
        return NoteView(id=i, text=text, created_at=0.0)

    judge = HeuristicJudge()
    assert _action(judge, view("2", DECIDED), view("1", WANTS)) == "EVOLVE"
    assert _action(judge, view("2", DECIDED), view("1", TWO_FACTS)) == "EXPAND"


@pytest.fixture
def services(make_services: ServicesFactory, backend: str) -> Services:
    return make_services(backend, amem=True)


def test_a_decision_never_hides_the_other_facts_of_the_older_note(services: Services) -> None:
    """The judge calls it EVOLVE (intent, then decision); the older note holds a second fact,
    so the two are related by `expands` and a search still finds the sister."""
    install(services, worker=False, scheduler=False)
    v = services.vault.scoped(A)
    old = v.add(TWO_FACTS)
    assert HeuristicJudge().evolve(DECIDED, Candidate(1, TWO_FACTS, 0.8)).action == "EVOLVE"
    new = v.add(DECIDED)
    assert new.evolution is not None and new.evolution == {
        "action": "EXPAND",
        "target_id": old.id,
        "links": new.evolution["links"],
    }
    older = v.get(old.id)
    assert older.valid_to is None and older.relations == {"expanded_by": (new.id,)}
    hits = v.search("where does the user's sister live", limit=5, mode="full")
    assert old.id in [h.note.id for h in hits]


def test_a_question_never_supersedes_a_slot_value(services: Services) -> None:
    install(services, worker=False, scheduler=False)
    v = services.vault.scoped(A)
    green = v.add("Bob's favourite colour is green")
    asked = v.add("Bob's favourite colour is blue?")
    assert asked.evolution is not None and asked.evolution["action"] != "EVOLVE"
    assert v.get(green.id).valid_to is None  # the statement "... is blue" still supersedes:
    # tests/test_client/test_amem.py

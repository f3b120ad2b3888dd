"""The stand-alone gate of context-keyed indexing (issue 31): a statement about a subject it
names is indexed without its predecessor's words and is not lifted by its neighbours, while a
reply still is; on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from memvault.runtime.factory import Services
from memvault.scope import Scope
from memvault.store.models import LinkRow
from memvault.text.standalone import stands_alone
from memvault.vault.drafts import NoteDraft
from memvault.vault.session_index import SEQUENCE
from tests.conftest import ServicesFactory

A = Scope("t1", "u1", "a1")
PEOPLE = ("Bob", "Alice", "Carol", "Dave", "Erin")
FACTS = (
    ("{p}'s favourite colour is {v}", "What is {p}'s favourite colour?",
     ("green", "blue", "red", "yellow", "purple")),
    ("{p} drives a {v}", "What car does {p} drive?",
     ("Volvo", "Toyota", "Tesla", "Peugeot", "Subaru")),
    ("{p} works as a {v}", "What does {p} work as?",
     ("nurse", "teacher", "plumber", "pilot", "baker")),
)  # fmt: skip


@pytest.fixture
def services(make_services: ServicesFactory, backend: str) -> Services:
    return make_services(backend)


@pytest.mark.parametrize(
    "text, predecessor",
    [
        ("Carol's favourite colour is yellow", "Bob's favourite colour is blue"),
        ("Bob drives a Volvo.", "Alice drives a Tesla"),
        ("Bob drives a Volvo.", "Bob's favourite colour is green"),
        ("User prefers dark mode in every editor", ""),
        ("Melanie: Caroline moved to Denver in May 2023.", "Caroline: We have news."),
    ],
)
def test_a_statement_about_a_named_subject_stands_alone(text: str, predecessor: str) -> None:
    assert stands_alone(text, predecessor)


@pytest.mark.parametrize(
    "text, predecessor",
    [
        ("Melanie: That is wonderful news, congratulations!", "Caroline: I adopted a dog"),
        ("Yes, she loved the trip to Kyoto", "Did Alice enjoy Japan?"),
        ("Bob sold it in March to a neighbour", "Did Bob ever sell the Volvo?"),
        ("Caroline: I went to a support group yesterday.", "Melanie: How was your week"),
        ("Alice told you about the move to Denver", "Caroline: news"),
        ("The support group was very welcoming.", "Caroline: I went to a support group"),
        ("Bob agrees", "Alice thinks we should leave"),
        ("鲍勃最喜欢的颜色是蓝色", "爱丽丝最喜欢的颜色是红色"),
    ],
)
def test_a_reply_does_not_stand_alone(text: str, predecessor: str) -> None:
    assert not stands_alone(text, predecessor)


def _facts(by_person: bool = False) -> list[tuple[str, str]]:
    """(text, question) in a conversation's order: attribute by attribute, each person in turn
    (every fact follows another person's fact of the same kind), or `by_person`, each person's
    facts together (a fact follows the same person's other fact)."""
    out = [
        (n, i, statement.format(p=person, v=values[i]), question.format(p=person))
        for n, (statement, question, values) in enumerate(FACTS)
        for i, person in enumerate(PEOPLE)
    ]
    if by_person:
        out.sort(key=lambda fact: (fact[1], fact[0]))
    return [(text, question) for _, _, text, question in out]


@pytest.mark.parametrize("by_person", [False, True])
def test_a_session_of_facts_finds_the_right_persons_fact(
    services: Services, by_person: bool
) -> None:
    """One session of stand-alone facts: every question's top result is the asked fact (a fact
    borrowing its predecessor's words, or lifted by its successor, put another person's or
    another attribute's fact first before the gate)."""
    v = services.vault.scoped(A)
    facts = _facts(by_person)
    notes = v.add_many(
        [
            NoteDraft(text, session_id="s1", occurred_at=f"2026-01-10T18:{n:02d}:00Z")
            for n, (text, _) in enumerate(facts)
        ]
    )
    for mode in ("sparse", "hybrid", "full"):
        wrong = [
            n
            for n, (_, question) in enumerate(facts)
            if v.search(question, limit=5, mode=mode)[0].note.id != notes[n].id
        ]
        assert wrong == [], mode
    points = services.index.retrieve("t1", [n.id for n in notes])
    assert all("prev" not in p.payload for p in points)
    with services.db.session("t1") as sess:
        links = sess.query(LinkRow).filter_by(kind=SEQUENCE).count()
    assert links == len(notes) - 1  # the session's order is still recorded


def test_a_reply_in_the_same_session_still_finds_its_context(services: Services) -> None:
    """After the gate, a reply keeps its predecessor: an answer to a question about the Volvo
    is found by the question's words, and a reaction by the news it reacts to."""
    v = services.vault.scoped(A)
    facts = _facts()
    v.add_many([NoteDraft(text, session_id="s1") for text, _ in facts])
    _, answer, news, reaction = v.add_many(
        [
            NoteDraft("Did Bob ever sell the old Volvo estate?", session_id="s1"),
            NoteDraft("Bob sold it in March to a neighbour", session_id="s1"),
            NoteDraft(
                "Caroline: I finally adopted the greyhound from the Willowbrook shelter",
                session_id="s1",
            ),
            NoteDraft("Melanie: That is wonderful news, congratulations!", session_id="s1"),
        ]
    )
    for mode in ("sparse", "hybrid"):
        ids = [h.note.id for h in v.search("Volvo estate sold", limit=3, mode=mode)]
        assert answer.id in ids, mode
        ids = [h.note.id for h in v.search("greyhound Willowbrook shelter", limit=2, mode=mode)]
        assert reaction.id in ids and news.id in ids, mode
    point = services.index.retrieve("t1", [answer.id, reaction.id])
    assert all("prev" in p.payload for p in point)

"""A-MEM on the vault's write path, on SQLite and PostgreSQL: openclaw-amem's four evolution
examples (offline judge inline, and the real anthropic SDK against the fake Messages API in the
background), hostile and absent LLMs, scope isolation, shared notes, durability and erasure."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

from memvault.amem.service import Amem
from memvault.amem.wiring import install
from memvault.runtime.factory import Services
from memvault.scope import Scope
from memvault.store.models import AmemJobRow, LinkRow
from memvault.testing.fake_messages import FakeMessagesServer, FakeReply
from tests.conftest import ServicesFactory
from tests.test_amem._replies import CONSTRUCT, construct_reply, prompt_of

A = Scope("t1", "u1", "a1")
B = Scope("t1", "u2", "a1")  # another user of the same tenant: near-identical notes

EXAMPLES = {
    "EVOLVE": ("The user wants to buy a Model 3", "The user decided on the standard RWD Model 3"),
    "CONFLICT": ("The user lives in Riverstone", "The user moved to Eastholm"),
    "EXPAND": ("The user has a sister", "The user's sister works in finance in Northvale"),
    "NEW": ("The user has a sister", "The quarterly invoice batch is due on the 14th"),
}


@pytest.fixture
def services(make_services: ServicesFactory, backend: str) -> Services:
    return make_services(backend, amem=True)


def _inline(services: Services) -> Amem:
    return install(services, worker=False, scheduler=False)


# -- the offline judge, inline -------------------------------------------------------------------


@pytest.mark.parametrize("action", ["EVOLVE", "CONFLICT", "EXPAND", "NEW"])
def test_heuristic_judge_reaches_openclaws_decisions_through_the_vault(
    services: Services, action: str
) -> None:
    _inline(services)
    v = services.vault.scoped(A)
    old_text, new_text = EXAMPLES[action]
    old = v.add(old_text)
    assert old.enrichment == "done" and old.keywords and old.category
    new = v.add(new_text)
    assert new.evolution is not None and new.evolution["action"] == action
    if action in ("EVOLVE", "EXPAND"):
        assert new.evolution["target_id"] == old.id
        older, newer = v.get(old.id), v.get(new.id)  # both kept whole, related
        assert older.text == old_text and newer.text == new_text
        kind = ("superseded_by", "supersedes") if action == "EVOLVE" else ("expanded_by", "expands")
        assert older.relations == {kind[0]: (new.id,)} and newer.relations == {kind[1]: (old.id,)}
        assert (older.valid_to is not None) == (action == "EVOLVE") and newer.current
    elif action == "CONFLICT":
        assert "conflict" in v.get(old.id).flags and "conflict" in v.get(new.id).flags
    else:
        assert v.get(old.id).text == old_text and v.get(new.id).text == new_text


def test_same_day_duplicate_merges_and_shared_notes_are_never_changed(services: Services) -> None:
    _inline(services)
    v = services.vault.scoped(A)
    first = v.add("The user went to the lake on Saturday with the kids")
    dup = v.add("The user went to the lake on Saturday with their kids")
    assert dup.evolution == {"action": "MERGE", "target_id": first.id, "links": 0}
    assert v.get(dup.id).relations == {"duplicate_of": (first.id,)}
    assert v.get(dup.id).text == "The user went to the lake on Saturday with their kids"
    found = v.search("lake on Saturday", limit=5)
    assert found[0].note.id == first.id and dup.id not in [h.note.id for h in found]
    assert found[0].note.relations == {"duplicates": (dup.id,)}
    other = services.vault.scoped(Scope("t1", "u1", "a2"))
    shared = other.add("The team offsite is in Lisbon in May", visibility="shared")
    mine = v.add("The team offsite is in Lisbon in May, flights booked")
    assert mine.evolution is not None and mine.evolution["target_id"] != shared.id
    assert other.get(shared.id).text == "The team offsite is in Lisbon in May"
    assert other.get(shared.id).history == 0


def test_links_are_made_within_the_user_only(services: Services) -> None:
    _inline(services)
    a = services.vault.scoped(A)
    b = services.vault.scoped(B)
    b.add("Melanie adopted a rescue greyhound called Pixel")
    mine = a.add("Melanie adopted a rescue greyhound called Pixel last spring")
    theirs_like = a.add("Pixel the greyhound loves long walks on the beach with Melanie")
    with services.db.session("t1") as sess:
        links = sess.query(LinkRow).filter_by(kind="link").all()
    assert links, "related notes of one user were not linked"
    assert {link.user_id for link in links} == {"u1"}
    ids = {mine.id, theirs_like.id}
    assert all(link.src_id in ids and link.dst_id in ids for link in links)
    assert [i for i, _, _ in a.links(theirs_like.id)] == [mine.id]


# -- the LLM judge through the real SDK, in the background ---------------------------------------


def _llm(server: FakeMessagesServer, *, retries: int = 0, timeout: float = 5.0) -> Any:
    """The real SDK's client on the fake Messages API (install builds the guarded judge)."""
    return anthropic.Anthropic(
        api_key="test-key", base_url=server.base_url, max_retries=retries, timeout=timeout
    )


def _scripted(action: str, merged: str | None) -> Any:
    def respond(body: Any) -> str:
        prompt = prompt_of(body)
        if CONSTRUCT in prompt:
            return construct_reply(["user"], ["life"], "Something about the user.")
        if "Classify the relation" in prompt:
            return json.dumps({"action": action, "merged_text": merged})
        if "genuinely related" in prompt:
            return json.dumps({"links": [{"n": 1, "strength": 0.8}]})
        return json.dumps({"changed": False, "context": None, "tags": []})

    return respond


@pytest.fixture
def server() -> Iterator[FakeMessagesServer]:
    with FakeMessagesServer() as running:
        yield running


@pytest.mark.parametrize("action", ["EVOLVE", "CONFLICT", "EXPAND", "NEW"])
def test_openclaw_examples_with_the_llm_judge(
    services: Services, server: FakeMessagesServer, action: str
) -> None:
    old_text, new_text = EXAMPLES[action]
    merged = f"{old_text}; {new_text}" if action in ("EVOLVE", "EXPAND") else None
    server.responder = _scripted(action, merged)
    amem = install(services, llm_client=_llm(server), worker=False, scheduler=False)
    a, b = services.vault.scoped(A), services.vault.scoped(B)
    theirs = b.add(old_text + " (other user)")  # near-identical, in another scope
    assert amem.jobs is not None
    amem.jobs.run_due("t1")
    server.requests.clear()
    old = a.add(old_text)
    assert old.enrichment == "pending" and old.evolution is None
    amem.jobs.run_due("t1")
    new = a.add(new_text)
    amem.jobs.run_due("t1")
    assert a.get(old.id).enrichment == "done"
    evolve_prompts = [r for r in server.requests if "Classify the relation" in r.prompt_text()]
    if action == "NEW":
        assert a.get(new.id).text == new_text and a.get(old.id).text == old_text
    else:
        assert evolve_prompts, "the judge was never asked about the pair"
    if action in ("EVOLVE", "EXPAND"):  # the judge's merged text is never written anywhere
        assert a.get(old.id).text == old_text and a.get(new.id).text == new_text
        kind = "supersedes" if action == "EVOLVE" else "expands"
        assert a.get(new.id).relations == {kind: (old.id,)}
    if action == "CONFLICT":
        assert "conflict" in a.get(old.id).flags and "conflict" in a.get(new.id).flags
    # No request of user u1's enrichment carries user u2's text.
    for request in server.requests:
        assert "(other user)" not in request.prompt_text()
        assert "<new_note>" in request.prompt_text() or "<note" in request.prompt_text()
    assert b.list_notes()[1] == 1 and b.get(theirs.id).text == old_text + " (other user)"
    assert "conflict" not in b.get(theirs.id).flags and b.get(theirs.id).history == 0


@pytest.mark.parametrize(
    "answer",
    [
        json.dumps({"links": [{"n": 7, "strength": 0.9}]}),  # an unknown candidate
        json.dumps({"links": [{"n": "01a22e40-73b0-7968-be41-5ab1c018656b", "strength": 1}]}),
        "this is not json",
        json.dumps({"action": "OBLITERATE", "merged_text": None}),
    ],
)
def test_hostile_llm_answers_change_nothing_and_are_counted(
    services: Services, server: FakeMessagesServer, answer: str
) -> None:
    server.responder = lambda _body: answer
    amem = install(services, llm_client=_llm(server), worker=False, scheduler=False)
    a, b = services.vault.scoped(A), services.vault.scoped(B)
    theirs = b.add("Melanie adopted a rescue greyhound called Pixel")
    first = a.add("Melanie adopted a rescue greyhound called Pixel")
    second = a.add("Melanie takes Pixel to the beach on Sundays")
    assert amem.jobs is not None
    amem.jobs.run_due("t1")
    assert a.get(first.id).enrichment == "done" and a.get(second.id).enrichment == "done"
    assert b.get(theirs.id).history == 0 and b.links(theirs.id) == []
    events = [e for e in services.audit.events("t1") if e["action"] == "llm.judge_event"]
    kinds = {e["details"]["kind"] for e in events}
    assert "rejected" in kinds and kinds <= {"rejected", "short_circuit", "breaker"}
    assert all(set(e["details"]) == {"kind", "reason"} for e in events)  # never any text


def test_an_llm_that_is_down_or_slow_never_loses_a_write(
    services: Services, server: FakeMessagesServer
) -> None:
    server.responder = lambda _body: FakeReply(status=529)
    amem = install(services, llm_client=_llm(server, timeout=0.5), worker=False, scheduler=False)
    a = services.vault.scoped(A)
    note = a.add("The user wants to buy a Model 3")
    assert a.get(note.id).text == "The user wants to buy a Model 3"
    assert amem.jobs is not None
    amem.jobs.run_due("t1")  # the guard falls back to the offline judge
    assert a.get(note.id).enrichment == "done" and a.get(note.id).keywords
    server.responder = lambda _body: FakeReply(text="{}", delay_s=2.0)
    slow = a.add("The user has a sister")
    amem.jobs.run_due("t1")
    assert a.get(slow.id).enrichment == "done"


def test_jobs_survive_a_restart(make_services: ServicesFactory, tmp_path: Any) -> None:
    data = tmp_path / "durable"
    first = make_services("sqlite", data_dir=data, amem=True)
    with FakeMessagesServer(responder=lambda _b: FakeReply(status=500)) as server:
        install(first, llm_client=_llm(server), worker=False, scheduler=False)
        note = first.vault.scoped(A).add("The user has a sister")
    first.close()
    again = make_services("sqlite", data_dir=data, amem=True)
    with again.db.session("t1") as sess:
        assert sess.query(AmemJobRow).count() == 1
    amem = install(again, worker=False, scheduler=False)  # the offline judge this time
    assert amem.jobs is not None and amem.jobs.run_due("t1") == 1
    assert again.vault.scoped(A).get(note.id).enrichment == "done"


def test_erasure_removes_history_links_and_jobs(services: Services) -> None:
    amem = _inline(services)
    a = services.vault.scoped(A)
    base = a.add("The user wants to buy a Model 3")
    a.add("The user decided on the standard RWD Model 3")
    a.add("Tesla service center visit for the Model 3 is next week")
    assert a.get(base.id).relations  # superseded, linked
    assert amem.jobs is not None
    amem.jobs.enqueue("t1", [(base.id, "u1", "a1", "a1")])  # one job left waiting
    report = services.eraser.erase("t1", "u1")
    assert report.verified, report.remaining
    assert services.eraser.remaining("t1", "u1")["amem_jobs"] == 0
    with services.db.session("t1") as sess:
        assert sess.query(LinkRow).count() == 0 and sess.query(AmemJobRow).count() == 0

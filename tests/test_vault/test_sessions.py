"""Sessions, event time and context-keyed indexing, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from memvault.errors import InvalidRequest
from memvault.index.base import PointFilter
from memvault.runtime.factory import Services
from memvault.scope import Scope
from memvault.store.models import LinkRow, NoteRow
from memvault.vault.drafts import NoteDraft
from memvault.vault.session_index import SEQUENCE
from memvault.vault.sessions import INDEX_VERSION
from tests.conftest import ServicesFactory

A = Scope("t1", "u1", "a1")
PREDECESSOR = "Caroline: I finally adopted the greyhound from the Willowbrook shelter"
SUCCESSOR = "Melanie: That is wonderful news, congratulations!"


@pytest.fixture
def services(make_services: ServicesFactory, backend: str) -> Services:
    return make_services(backend)


def _filler(n: int) -> list[NoteDraft]:
    return [NoteDraft(f"Melanie: painting number {i} is almost finished, thanks") for i in range(n)]


def test_predecessor_words_raise_the_successor(services: Services) -> None:
    """A query naming only the predecessor's words finds the successor too, and above notes
    that share only the successor's own common words; without a session it does not."""
    v = services.vault.scoped(A)
    v.add_many(_filler(12))
    first, second = v.add_many(
        [NoteDraft(PREDECESSOR, session_id="s1"), NoteDraft(SUCCESSOR, session_id="s1")]
    )
    alone = v.add(SUCCESSOR.replace("wonderful", "lovely"))  # same words, no session
    for mode in ("sparse", "hybrid"):
        ids = [h.note.id for h in v.search("greyhound Willowbrook shelter", limit=5, mode=mode)]
        assert ids[:2] == [first.id, second.id] or ids[:2] == [second.id, first.id], mode
        assert alone.id not in ids[:2]


def test_a_note_is_never_returned_with_its_predecessor_text(services: Services) -> None:
    v = services.vault.scoped(A)
    _, second = v.add_many(
        [NoteDraft(PREDECESSOR, session_id="s1"), NoteDraft(SUCCESSOR, session_id="s1")]
    )
    assert v.get(second.id).text == SUCCESSOR
    for mode in ("sparse", "hybrid", "full", "dense"):
        for hit in v.search("greyhound shelter", limit=5, mode=mode):
            assert "greyhound" not in hit.note.text or hit.note.text == PREDECESSOR
    listed, _ = v.list_notes()
    assert sorted(n.text for n in listed) == sorted([PREDECESSOR, SUCCESSOR])


def test_session_id_and_occurred_at_come_back_on_the_note(services: Services) -> None:
    v = services.vault.scoped(A)
    note = v.add(PREDECESSOR, session_id="conv-7", occurred_at="2023-05-08T13:56:00+02:00")
    again = v.get(note.id)
    assert again.session_id == "conv-7" and note.session_id == "conv-7"
    assert again.occurred_at == pytest.approx(1683546960.0)
    plain = v.add("Something without a session at all")
    assert plain.session_id is None and plain.occurred_at == plain.created_at


@pytest.mark.parametrize(
    "field, value",
    [
        ("session_id", "bad id with spaces"),
        ("session_id", 42),
        ("occurred_at", "2023-05-08"),
        ("occurred_at", "yesterday"),
        ("occurred_at", float("inf")),
        ("occurred_at", True),
        ("occurred_at", "10000-01-01T00:00:00Z"),
    ],
)
def test_bad_session_fields_are_refused_and_store_nothing(
    services: Services, field: str, value: object
) -> None:
    v = services.vault.scoped(A)
    with pytest.raises(InvalidRequest) as err:
        v.add_many([NoteDraft("A perfectly fine note text", **{field: value})])  # type: ignore[arg-type]
    assert field in str(err.value) and str(value) not in str(err.value).replace(field, "")
    assert v.list_notes()[1] == 0


def test_same_session_id_never_joins_two_users(services: Services) -> None:
    u1 = services.vault.scoped(A)
    u2 = services.vault.scoped(Scope("t1", "u2", "a1"))
    u1.add(PREDECESSOR, session_id="shared-name")
    theirs = u2.add(SUCCESSOR, session_id="shared-name")
    hits = u2.search("greyhound Willowbrook shelter", limit=5, mode="sparse")
    assert hits == []  # u1's words did not become context of u2's note
    with services.db.session("t1") as sess:
        links = sess.query(LinkRow).all()
        tags = {r.user_id: r.session_tag for r in sess.query(NoteRow).all()}
    assert links == [] and tags["u1"] != tags["u2"]
    point = services.index.retrieve("t1", [theirs.id])[0]
    assert "prev" not in point.payload


def test_sequence_link_and_successor_reindexed_on_update_and_delete(services: Services) -> None:
    v = services.vault.scoped(A)
    first, second, third = v.add_many(
        [
            NoteDraft(PREDECESSOR, session_id="s1"),
            NoteDraft(SUCCESSOR, session_id="s1"),
            NoteDraft("Caroline: we walk along the quay every morning", session_id="s1"),
        ]
    )
    with services.db.session("t1") as sess:
        seq = {(r.src_id, r.dst_id) for r in sess.query(LinkRow).filter_by(kind=SEQUENCE)}
    assert seq == {(second.id, first.id), (third.id, second.id)}
    assert services.index.retrieve("t1", [second.id])[0].payload["prev"] == first.id

    v.update(first.id, text="Caroline: I finally adopted the whippet from the Oakhaven rescue")
    found = [h.note.id for h in v.search("Oakhaven whippet", limit=5, mode="sparse")]
    assert second.id in found  # the successor now carries the new predecessor text
    assert second.id not in [h.note.id for h in v.search("Willowbrook", limit=5, mode="sparse")]

    v.delete(second.id)  # the third note's predecessor becomes the first
    assert services.index.retrieve("t1", [third.id])[0].payload["prev"] == first.id
    found = [h.note.id for h in v.search("Oakhaven whippet", limit=5, mode="sparse")]
    assert third.id in found and second.id not in found


def test_private_predecessor_is_not_borrowed_by_a_wider_note(services: Services) -> None:
    """A note readable by more agents never carries the words of one they cannot read."""
    v = services.vault.scoped(A)
    v.add(PREDECESSOR, session_id="s1")  # readable by a1 only
    wider = v.add(SUCCESSOR, session_id="s1", readers=["a2"])
    other = services.vault.scoped(Scope("t1", "u1", "a2"))
    assert other.search("greyhound Willowbrook", limit=5, mode="sparse") == []
    assert "prev" not in services.index.retrieve("t1", [wider.id])[0].payload


def test_event_date_is_searchable(services: Services) -> None:
    v = services.vault.scoped(A)
    v.add_many(_filler(8))
    dated = v.add("Caroline went to the pride parade", occurred_at="2023-05-20T10:00:00Z")
    v.add("Caroline went to the pride parade again", occurred_at="2024-07-02T10:00:00Z")
    hits = v.search("What happened in May 2023?", limit=3, mode="sparse")
    assert hits and hits[0].note.id == dated.id


def test_new_rows_carry_the_current_index_version(services: Services) -> None:
    v = services.vault.scoped(A)
    note = v.add(PREDECESSOR)
    with services.db.session("t1") as sess:
        row = sess.get(NoteRow, ("t1", note.id))
        assert row is not None and row.index_version == INDEX_VERSION
    assert services.index.count("t1", PointFilter()) == 1


def test_ids_follow_write_order_within_a_millisecond() -> None:
    """Turns with the same event time are ordered by id: ids must sort in the order made."""
    from memvault.ids import uuid7

    ids = [uuid7() for _ in range(20_000)]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)


def test_an_update_keeps_the_session(services: Services) -> None:
    v = services.vault.scoped(A)
    note = v.add(PREDECESSOR, session_id="s9", occurred_at="2023-05-08T13:56:00Z")
    changed = v.update(note.id, text="Caroline adopted a whippet instead", topics=["pets"])
    assert changed.session_id == "s9" and v.get(note.id).session_id == "s9"
    assert changed.occurred_at == pytest.approx(1683554160.0)

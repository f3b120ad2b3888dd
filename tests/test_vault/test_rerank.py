"""The re-ranking stage: shape flags sealed at ingest, the five features, neutral defaults."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from sqlalchemy import select

from memvault.index.base import Hit
from memvault.scope import Scope
from memvault.store.models import NoteRow
from memvault.vault import rerank as rr
from memvault.vault.ranking import Scored
from memvault.vault.rerank import NoteShape, Rerank, note_flags, parse_speaker, reorder, shape_of
from tests.conftest import ServicesFactory
from tests.disk_scan import files_holding


def _cand(i: str, score: float, **payload: object) -> Scored:
    return Scored(Hit(i, score, dict(payload)), score, 0.0, score, score)


def _ids(ranked: list[Scored]) -> list[str]:
    return [c.hit.id for c in ranked]


# -- flags at ingest ---------------------------------------------------------------------------


def test_speaker_is_a_capitalised_name_prefix_only() -> None:
    assert parse_speaker("Caroline: I went to the support group yesterday.") == "caroline"
    assert parse_speaker("  Mary Ann Smith : hello there") == "mary ann smith"
    assert parse_speaker("note: buy milk") is None  # lower case: not a name
    assert parse_speaker("See https://example.org: it is down") is None
    assert parse_speaker("Caroline said hi") is None
    assert parse_speaker("Time: 10:30") == "time"  # a capitalised label is taken as a name
    assert parse_speaker("A" * 60 + ": too long for a name") is None


def test_note_flags_hold_speaker_question_and_token_count() -> None:
    flags = note_flags("Melanie: Did you paint that?", ["melani", "paint"])[rr.FLAGS_KEY]
    assert flags == {"v": 1, "q": 1, "n": 2, "spk": "melanie"}
    plain = note_flags("我昨天去了公园。", ["我", "昨天", "公园"])[rr.FLAGS_KEY]
    assert plain == {"v": 1, "q": 0, "n": 3}
    assert note_flags("你去哪里了？", ["去", "哪里"])[rr.FLAGS_KEY]["q"] == 1


def test_shape_of_reads_flags_and_session_and_ignores_malformed_values() -> None:
    attrs = {"session_id": "s1", rr.FLAGS_KEY: {"v": 1, "q": 0, "n": 7, "spk": "jon"}}
    assert shape_of(attrs) == NoteShape("s1", "jon", False, 7)
    assert shape_of({"session_id": "s2"}) == NoteShape(session="s2")  # written before flags
    assert shape_of({rr.FLAGS_KEY: {"q": "yes", "n": -3, "spk": 5}}) == NoteShape()


# -- the features ------------------------------------------------------------------------------


def test_a_question_is_demoted_below_a_statement_with_equal_fused_score() -> None:
    cands = [_cand("ask", 0.8), _cand("tell", 0.8)]
    n = rr.REF_TOKENS  # the length feature is 0 at the reference length
    shapes = {"ask": NoteShape(question=True, tokens=n), "tell": NoteShape(tokens=n)}
    ranked = reorder(cands, shapes, "what did she paint", Rerank())
    assert _ids(ranked) == ["tell", "ask"]
    assert ranked[1].score == pytest.approx(0.8 - Rerank().question)
    assert _ids(reorder(cands, shapes, "q", Rerank(question=0.0))) == ["ask", "tell"]


def test_the_named_speaker_rises_and_the_other_speaker_falls() -> None:
    cands = [_cand("mel", 1.0), _cand("anon", 0.95), _cand("car", 0.9)]
    shapes = {"mel": NoteShape(speaker="melanie"), "car": NoteShape(speaker="caroline")}
    ranked = reorder(cands, shapes, "What did Caroline's mentor say?", Rerank())
    assert _ids(ranked) == ["car", "anon", "mel"]
    by_id = {c.hit.id: c.score for c in ranked}
    assert by_id["car"] == pytest.approx(0.9 + 0.3)
    assert by_id["mel"] == pytest.approx(1.0 - 0.3)
    assert by_id["anon"] == pytest.approx(0.95)  # no speaker: neutral
    # a query naming nobody in the pool changes nothing
    assert _ids(reorder(cands, shapes, "what did the mentor say", Rerank())) == _ids(cands)


def test_longer_turns_and_first_turns_and_the_top_sessions_gain() -> None:
    weights = Rerank(speaker=0, question=0, length=0.3, first=0, same_session=0)
    short_long = [_cand("short", 0.5), _cand("long", 0.5)]
    shapes = {"short": NoteShape(tokens=3), "long": NoteShape(tokens=30)}
    assert _ids(reorder(short_long, shapes, "q", weights)) == ["long", "short"]

    first = Rerank(speaker=0, question=0, length=0, first=0.1, same_session=0)
    cands = [_cand("later", 0.5, prev="x"), _cand("opening", 0.5), _cand("nosession", 0.5)]
    shapes = {"later": NoteShape(session="s1"), "opening": NoteShape(session="s1")}
    assert _ids(reorder(cands, shapes, "q", first)) == ["opening", "later", "nosession"]

    same = Rerank(speaker=0, question=0, length=0, first=0, same_session=0.2)
    cands = [_cand(i, 1.0 - 0.1 * n, prev="p") for n, i in enumerate("abcde")]
    shapes = {i: NoteShape(session="s9" if i in "ae" else f"s{i}") for i in "abcde"}
    ranked = reorder(cands, shapes, "q", same)
    assert _ids(ranked) == ["a", "b", "c", "e", "d"]  # e (0.6) shares a top-3 session: past d


def test_the_best_session_in_the_pool_lifts_its_other_notes() -> None:
    weights = Rerank(speaker=0, question=0, length=0, first=0, same_session=0, session_best=0.5)
    cands = [_cand("x", 0.9, prev="p"), _cand("top", 0.8, prev="p"), _cand("mate", 0.3, prev="p")]
    cands += [_cand("lone", 0.4, prev="p")]
    shapes = {"x": NoteShape(session="a"), "top": NoteShape(session="b")}
    shapes |= {"mate": NoteShape(session="b"), "lone": NoteShape(session="c")}
    by_id = {c.hit.id: c.score for c in reorder(cands, shapes, "q", weights)}
    assert by_id["mate"] == pytest.approx(0.3 + 0.5 * 0.8)  # its session's best is "top"
    assert by_id["lone"] == pytest.approx(0.4 + 0.5 * 0.4)
    counted = Rerank(speaker=0, question=0, length=0, first=0, same_session=0, session_count=1)
    by_id = {c.hit.id: c.score for c in reorder(cands, shapes, "q", counted)}
    assert by_id["mate"] == pytest.approx(0.3 + math.log(2)) and by_id["lone"] == 0.4


def test_notes_without_flags_keep_the_fused_order_exactly() -> None:
    cands = [_cand(i, 1.0 - 0.01 * n, prev="p") for n, i in enumerate("abcdefgh")]
    ranked = reorder(cands, {}, "What did Caroline say?", Rerank())
    assert ranked == cands
    assert reorder([], {}, "q", Rerank()) == []


def test_a_mostly_han_query_is_not_reranked_unless_enabled() -> None:
    assert Rerank().for_query("他在哪里工作？") is None
    assert Rerank(han=True).for_query("他在哪里工作？") is not None
    assert Rerank().for_query("Where does Jon work?") is not None


# -- through the vault -------------------------------------------------------------------------


def _stored_attrs(services: object, scope: Scope, note_id: str) -> dict[str, object]:
    vault = services.vault  # type: ignore[attr-defined]
    with vault.parts.db.session(scope.tenant) as sess:
        row = sess.execute(select(NoteRow).where(NoteRow.id == note_id)).scalar_one()
    return dict(vault.codec.open_attrs(scope, row.id, row.key_version, row.attrs_ct))


def test_flags_are_sealed_at_add_and_recomputed_at_update(
    make_services: ServicesFactory, backend: str
) -> None:
    services = make_services(backend)
    scope = Scope("t1", "u1", "a1")
    agent = services.vault.scoped(scope)
    note = agent.add("Qzspeakerxj: did you ever go to the lake?", session_id="s1")
    flags = _stored_attrs(services, scope, note.id)[rr.FLAGS_KEY]
    assert flags == {"v": 1, "q": 1, "n": 4, "spk": "qzspeakerxj"}
    agent.update(note.id, text="We went to the lake in June with the whole family.")
    flags = _stored_attrs(services, scope, note.id)[rr.FLAGS_KEY]
    assert flags["q"] == 0 and "spk" not in flags and flags["n"] > 4
    assert _stored_attrs(services, scope, note.id)["session_id"] == "s1"  # kept


def test_flags_are_not_in_plaintext_anywhere_under_the_data_dir(
    make_services: ServicesFactory, tmp_path: Path
) -> None:
    root = tmp_path / "vault"
    services = make_services("sqlite", data_dir=root)
    agent = services.vault.scoped(Scope("t1", "u1", "a1"))
    for i in range(20):
        agent.add(f"Qzspeakerxj: note {i} about the qzlakexj trip?", session_id="s1")
    assert agent.search("What did Qzspeakerxj say about the trip?", mode="hybrid")
    services.close()
    needles = [b"qzspeakerxj", b"Qzspeakerxj", b'"spk"', b'"shape"', b"qzlakexj"]
    assert [(p.name, i) for p, i in files_holding(root, needles)] == []


def test_search_demotes_a_question_with_real_scores_and_old_notes_stay_neutral(
    make_services: ServicesFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    services = make_services("sqlite")
    agent = services.vault.scoped(Scope("t1", "u1", "a1"))
    model = services.vault.parts.embedder.model_id
    texts = [
        "Jon: Did you adopt a dog from the shelter last spring?",
        "Gina: I adopted a dog from the shelter last spring, her name is Luna.",
        "Jon: The weather was lovely at the beach yesterday.",
    ]
    ids = [agent.add(t, session_id="s1").id for t in texts]
    query = "What dog did Gina adopt from the shelter?"
    on = [h.note.id for h in agent.search(query, limit=3, mode="hybrid")]
    assert on[0] == ids[1]
    monkeypatch.setitem(rr.RERANK_BY_MODEL, model, None)
    off = [h.note.id for h in agent.search(query, limit=3, mode="hybrid")]
    assert set(off) == set(on)

    # notes written before the flags existed: the stage changes nothing for them
    monkeypatch.setattr("memvault.vault.writes.note_flags", lambda text, tokens: {})
    old = services.vault.scoped(Scope("t1", "u2", "a1"))
    for t in texts:
        old.add(t)
    monkeypatch.setitem(rr.RERANK_BY_MODEL, model, None)
    plain = [(h.note.id, h.score) for h in old.search(query, limit=3, mode="hybrid")]
    monkeypatch.setitem(rr.RERANK_BY_MODEL, model, Rerank())
    ranked = [(h.note.id, h.score) for h in old.search(query, limit=3, mode="hybrid")]
    assert len(plain) == 3 and [i for i, _ in ranked] == [i for i, _ in plain]
    assert [s for _, s in ranked] == pytest.approx([s for _, s in plain])

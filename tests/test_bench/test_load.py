"""`bench.load`'s client keeps the id under which an added note stays readable."""

from __future__ import annotations

from bench.load import Written, absorbed_into, kept_id, parse_mix


def test_an_absorbed_note_is_read_under_its_survivor() -> None:
    assert kept_id({"id": "n1", "evolution": None}) == "n1"
    assert kept_id({"id": "n1"}) == "n1"
    assert kept_id({"id": "n1", "evolution": {"action": "NEW", "target_id": None}}) == "n1"
    assert kept_id({"id": "n1", "evolution": {"action": "CONFLICT", "target_id": "n0"}}) == "n1"
    assert kept_id({"id": "n1", "evolution": {"action": "PENDING", "target_id": None}}) == "n1"
    for action in ("EVOLVE", "EXPAND", "MERGE"):
        assert kept_id({"id": "n1", "evolution": {"action": action, "target_id": "n0"}}) == "n0"


def test_the_mix_is_parsed_by_weight() -> None:
    assert parse_mix("add=3,search=4") == {"add": 3, "search": 4}


def test_a_clients_words_stay_the_sorted_distinct_words_of_its_notes() -> None:
    notes = Written()
    texts = ["the dog ate the cake", "a cake for Alice", "Alice walked the dog"]
    for i, text in enumerate(texts):
        notes.add({"id": f"n{i}", "text": text})
    assert notes.ids == ["n0", "n1", "n2"] and notes.texts == texts
    assert notes.words == sorted({w for t in texts for w in t.split()})


def test_a_note_merged_later_is_read_under_the_survivor_its_404_names() -> None:
    absorbed = {"error": {"code": "absorbed", "message": "this memory was merged into memory n0"}}
    assert absorbed_into(absorbed, "/v1/memories/n0") == "n0"
    assert absorbed_into(absorbed, None) is None
    assert absorbed_into({"error": {"code": "not_found", "message": "x"}}, "/v1/x") is None
    assert absorbed_into(None, "/v1/memories/n0") is None
    notes = Written()
    for i in range(3):
        notes.add({"id": f"n{i}", "text": f"note {i}"})
    notes.moved("n2", "n0")
    assert notes.ids == ["n0", "n1", "n0"]
